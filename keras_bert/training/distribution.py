"""Data- and model-parallel training on the engines Keras already runs on.

`configure_distribution` picks the engine for the running backend; keras_bert
adds no gradient exchange of its own:

| backend    | data_parallel                          | model_parallel        |
|------------|----------------------------------------|-----------------------|
| jax        | `keras.distribution.DataParallel`      | `keras.distribution.ModelParallel` with `bert_layout_map` |
| tensorflow | `tf.distribute.MirroredStrategy`; `MultiWorkerMirroredStrategy` when `TF_CONFIG` lists several workers; `TPUStrategy` with `tpu=` | not available |
| torch      | not available in `model.fit`           | not available         |

Use the engine's scope around building, compiling and fitting, and feed
batches of the global size (per-replica batch x replicas); the optimizer
counts global steps, so learning-rate schedules are written in global steps:

    engine = configure_distribution("data_parallel")
    with distribution_scope(engine):
        model = keras_bert.BertPretrainer(backbone)   # built in the scope
        model.compile(...)
        model.fit(distribute_dataset(examples, engine, 32), steps_per_epoch=n)
"""

import contextlib

import keras

from keras_bert.training.distribution_engines import jax_distribution
from keras_bert.training.distribution_engines import tf_strategy
from keras_bert.training.distribution_kinds import DATA_PARALLEL
from keras_bert.training.distribution_kinds import KINDS

_TORCH_UNSUPPORTED = (
    "Keras 3 has no distribution engine for the torch backend: "
    "keras.distribution (DataParallel/ModelParallel) is JAX-only and "
    "tf.distribute is TensorFlow-only, so model.fit runs on one device. For "
    "multi-GPU data parallelism on torch, wrap the model in "
    "torch.nn.parallel.DistributedDataParallel in your own training loop "
    "(https://keras.io/guides/distributed_training_with_torch/), or run "
    "keras_bert with KERAS_BACKEND=jax (data and model parallel) or "
    "KERAS_BACKEND=tensorflow (data parallel)."
)


def configure_distribution(
    kind=None,
    mesh_shape=None,
    backend=None,
    devices=None,
    multi_host=None,
    tpu=None,
):
    """Returns the distribution engine for `kind` on the running backend.

    Call it before building the model (and, for multi-host JAX, before any
    JAX computation), then build, compile and fit inside
    `distribution_scope(engine)`.

    Args:
        kind: None (one device), "data_parallel" (replicated weights, the
            batch split over devices) or "model_parallel" (JAX only:
            weights split by `bert_layout_map` over the mesh's model axis,
            the batch over its data axis).
        mesh_shape: tuple of ints. `(data,)` for data parallel (default:
            all devices); `(data, model)` for model parallel (default:
            `(1, all devices)`). The product must equal the device count.
        backend: str or None. Must match the running Keras backend; None
            means the running one.
        devices: optional list of device names (JAX, e.g. "gpu:0") or TF
            device strings to use instead of all visible ones.
        multi_host: bool or None. JAX: join a multi-process cluster through
            `keras.distribution.initialize()` (which reads the
            `KERAS_DISTRIBUTION_*` variables, or detects Cloud TPU pods and
            SLURM). None joins only when those variables are set. On
            TensorFlow the cluster comes from `TF_CONFIG`.
        tpu: str or None. TensorFlow: TPU name or address ("local" on a TPU
            VM); selects `TPUStrategy`.

    Returns:
        None for `kind=None`; a `keras.distribution.Distribution` on JAX; a
        `tf.distribute.Strategy` on TensorFlow.

    Example:
    >>> configure_distribution(None) is None
    True
    """
    running = keras.config.backend()
    backend = backend or running
    if backend != running:
        raise ValueError(
            f"Asked for a {backend!r} distribution but Keras runs on "
            f"{running!r}. Set KERAS_BACKEND={backend} before importing "
            "keras, or drop the backend argument."
        )
    if kind is None:
        if mesh_shape is not None:
            raise ValueError(
                f"mesh_shape={tuple(mesh_shape)} was given without a "
                "distribution kind. Pass kind='data_parallel' or "
                "'model_parallel' (--distribution on the command line)."
            )
        return None
    if kind not in KINDS:
        raise ValueError(
            f"Unknown distribution kind {kind!r}. Use one of {KINDS} or None."
        )
    mesh_shape = _check_mesh_shape(kind, mesh_shape)
    if backend == "jax":
        return jax_distribution(kind, mesh_shape, devices, multi_host, tpu)
    if backend == "tensorflow":
        return tf_strategy(kind, mesh_shape, devices, multi_host, tpu)
    if backend == "torch":
        raise ValueError(f"--distribution {kind}: {_TORCH_UNSUPPORTED}")
    raise ValueError(
        f"No distribution engine for the {backend!r} backend. Use "
        "KERAS_BACKEND=jax or tensorflow."
    )


def distribution_scope(engine):
    """The engine's scope, or a no-op context for single-device runs."""
    return contextlib.nullcontext() if engine is None else engine.scope()


def num_replicas(engine):
    """Model replicas that each take a slice of the global batch."""
    if engine is None:
        return 1
    if hasattr(engine, "num_replicas_in_sync"):  # tf.distribute.Strategy
        return engine.num_replicas_in_sync
    # keras.distribution: the size of the mesh's data axis.
    return engine.num_model_replicas


def global_batch_size(per_replica_batch_size, engine):
    """`per_replica_batch_size` x replicas: what one optimizer step sees."""
    return per_replica_batch_size * num_replicas(engine)


def distribute_dataset(dataset, engine, per_replica_batch_size=None):
    """Prepares a `tf.data` pipeline for `model.fit` under `engine`.

    The result yields global batches (per-replica batch x replicas) with a
    static batch size; `fit` then splits each one: over the local devices,
    and on several workers or processes, across them (each keeps its part,
    TensorFlow by `AutoShardPolicy.DATA`, JAX by rebatch + shard). So every
    worker must produce the same stream: shuffle with a fixed seed.

    Args:
        dataset: `tf.data.Dataset` of single examples when
            `per_replica_batch_size` is given, otherwise already batched
            with `drop_remainder=True` at a size divisible by the replicas.
        engine: what `configure_distribution` returned (None: one device).
        per_replica_batch_size: int or None. Batch per replica.

    Returns:
        The `tf.data.Dataset` to pass to `fit`.
    """
    import tensorflow as tf

    replicas = num_replicas(engine)
    if per_replica_batch_size is not None:
        dataset = dataset.batch(
            per_replica_batch_size * replicas, drop_remainder=True
        )
    else:
        batch = _static_batch_size(dataset)
        if batch is None or batch % replicas:
            raise ValueError(
                f"The dataset's batch size is {batch}; distributing it over "
                f"{replicas} replicas needs a static size divisible by "
                f"{replicas}. Batch with .batch(n, drop_remainder=True) or "
                "pass per_replica_batch_size= with unbatched examples."
            )
    options = tf.data.Options()
    options.experimental_distribute.auto_shard_policy = (
        tf.data.experimental.AutoShardPolicy.DATA
    )
    return dataset.with_options(options)


def is_chief(engine=None):
    """True on the one process that should write checkpoints and logs."""
    if keras.config.backend() == "jax":
        import jax

        return jax.process_index() == 0
    resolver = getattr(engine, "cluster_resolver", None)
    if resolver is None or not resolver.task_type:
        return True
    has_chief = "chief" in resolver.cluster_spec().as_dict()
    return resolver.task_type == "chief" or (
        not has_chief and resolver.task_type == "worker"
        and resolver.task_id == 0
    )


def use_virtual_cpu_devices(count):
    """Splits the host CPU into `count` devices to rehearse a distributed run.

    Every device shares the same cores, so this checks correctness and
    overhead, not speed. Call it first thing: JAX and TensorFlow fix their
    device list when they start computing.
    """
    backend = keras.config.backend()
    # Both raise RuntimeError once started; counting devices before that
    # would itself start JAX, too early for `jax.distributed`.
    if backend == "jax":
        import jax

        try:
            jax.config.update("jax_num_cpu_devices", count)
            found = count
        except RuntimeError:
            found = len(jax.devices("cpu"))
    elif backend == "tensorflow":
        import tensorflow as tf

        cpu = tf.config.list_physical_devices("CPU")[0]
        try:
            tf.config.set_logical_device_configuration(
                cpu, [tf.config.LogicalDeviceConfiguration()] * count
            )
            found = count
        except RuntimeError:
            found = len(tf.config.list_logical_devices("CPU"))
    else:
        raise ValueError(
            f"Virtual CPU devices need KERAS_BACKEND=jax or tensorflow, not "
            f"{backend!r}. {_TORCH_UNSUPPORTED}"
        )
    if found != count:
        raise RuntimeError(
            f"{backend} already started with {found} CPU device(s), so "
            f"{count} virtual devices cannot be made. Call "
            "use_virtual_cpu_devices before any computation."
        )


def _check_mesh_shape(kind, mesh_shape):
    if mesh_shape is None:
        return None
    mesh_shape = tuple(int(size) for size in mesh_shape)
    if kind == DATA_PARALLEL:
        if len(mesh_shape) == 2 and mesh_shape[1] == 1:
            mesh_shape = mesh_shape[:1]
        if len(mesh_shape) != 1:
            raise ValueError(
                f"data_parallel replicates the model, so its mesh has one "
                f"axis; got mesh_shape={mesh_shape}. Pass ({mesh_shape[0]},) "
                "or use model_parallel to split weights over the second axis."
            )
    elif len(mesh_shape) != 2:
        raise ValueError(
            f"model_parallel needs mesh_shape=(data, model); got {mesh_shape}."
        )
    return mesh_shape


def _static_batch_size(dataset):
    import tensorflow as tf

    sizes = {
        spec.shape[0]
        for spec in tf.nest.flatten(dataset.element_spec)
        if spec.shape.rank
    }
    return sizes.pop() if len(sizes) == 1 else None
