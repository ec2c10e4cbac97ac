"""The engines `configure_distribution` builds: a `keras.distribution`
on JAX, a `tf.distribute` strategy on TensorFlow. Each imports its
backend only when called, so `import keras_bert` stays free of both."""

import json
import os

import keras

from keras_bert.training.distribution_kinds import DATA_PARALLEL
from keras_bert.training.distribution_kinds import MODEL_PARALLEL
from keras_bert.training.layout_map import DATA_AXIS
from keras_bert.training.layout_map import MODEL_AXIS
from keras_bert.training.layout_map import bert_layout_map

# Set by whoever launches a multi-process JAX job (see `keras.distribution.
# initialize`); their presence means "join the cluster".
_JAX_CLUSTER_VARIABLES = (
    "KERAS_DISTRIBUTION_JOB_ADDRESSES",
    "KERAS_DISTRIBUTION_NUM_PROCESSES",
)


def _check_device_count(mesh_shape, devices, backend):
    needed = 1
    for size in mesh_shape:
        needed *= size
    if needed != len(devices):
        shape = "x".join(str(size) for size in mesh_shape)
        raise ValueError(
            f"A {shape} mesh needs {needed} devices but {backend} has "
            f"{len(devices)}: {list(devices)}. Change --mesh-shape, or on a "
            "CPU-only machine make virtual devices "
            "(keras_bert.training.distribution.use_virtual_cpu_devices)."
        )


def jax_distribution(kind, mesh_shape, devices, multi_host, tpu):
    """`DataParallel` over a 1-D mesh, or `ModelParallel` over a (data,
    model) mesh with `bert_layout_map`; joins a multi-process cluster
    first when `multi_host` (None: when its variables are set)."""
    import jax

    if tpu is not None:
        raise ValueError(
            "tpu= selects TensorFlow's TPUStrategy. JAX finds TPU devices by "
            "itself: drop --tpu (add --multi-host on a TPU pod slice)."
        )
    if multi_host is None:
        multi_host = any(name in os.environ for name in _JAX_CLUSTER_VARIABLES)
    if multi_host and not jax.distributed.is_initialized():
        keras.distribution.initialize()
    devices = list(devices or keras.distribution.list_devices())
    if kind == DATA_PARALLEL:
        mesh_shape = mesh_shape or (len(devices),)
        _check_device_count(mesh_shape, devices, "JAX")
        mesh = keras.distribution.DeviceMesh(mesh_shape, (DATA_AXIS,), devices)
        return keras.distribution.DataParallel(device_mesh=mesh)
    mesh_shape = mesh_shape or (1, len(devices))
    _check_device_count(mesh_shape, devices, "JAX")
    mesh = keras.distribution.DeviceMesh(
        mesh_shape, (DATA_AXIS, MODEL_AXIS), devices
    )
    return keras.distribution.ModelParallel(
        layout_map=bert_layout_map(mesh), batch_dim_name=DATA_AXIS
    )


def tf_strategy(kind, mesh_shape, devices, multi_host, tpu):
    """`TPUStrategy` with `tpu`, `MultiWorkerMirroredStrategy` when
    TF_CONFIG lists several workers, else `MirroredStrategy` over the
    local devices (data parallel only)."""
    import tensorflow as tf

    if kind == MODEL_PARALLEL:
        raise ValueError(
            "model_parallel (weights split over devices) is not available on "
            "TensorFlow: Keras 3 shards weights only through "
            "keras.distribution on JAX. Run with KERAS_BACKEND=jax, or use "
            "--distribution data_parallel."
        )
    workers = _tf_config_workers()
    if tpu is not None:
        resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu=tpu)
        tf.config.experimental_connect_to_cluster(resolver)
        tf.tpu.experimental.initialize_tpu_system(resolver)
        strategy = tf.distribute.TPUStrategy(resolver)
    elif workers > 1:
        strategy = _multi_worker_mirrored_strategy()
    elif multi_host:
        raise ValueError(
            "--multi-host on TensorFlow needs TF_CONFIG listing every worker, "
            'e.g. {"cluster": {"worker": ["host1:12345", "host2:12345"]}, '
            '"task": {"type": "worker", "index": 0}} (see '
            "docs/distributed.md)."
        )
    else:
        devices = list(devices or _tf_local_devices())
        if mesh_shape:
            _check_device_count(mesh_shape, devices[: mesh_shape[0]], "TF")
            devices = devices[: mesh_shape[0]]
        strategy = tf.distribute.MirroredStrategy(devices)
    if mesh_shape and strategy.num_replicas_in_sync != mesh_shape[0]:
        raise ValueError(
            f"mesh_shape={mesh_shape} asks for {mesh_shape[0]} replicas but "
            f"{type(strategy).__name__} has {strategy.num_replicas_in_sync}. "
            "Drop --mesh-shape to use them all."
        )
    return strategy


def _tf_local_devices():
    import tensorflow as tf

    gpus = tf.config.list_logical_devices("GPU")
    return [d.name for d in gpus or tf.config.list_logical_devices("CPU")]


def _tf_config_workers():
    text = os.environ.get("TF_CONFIG")
    if not text:
        return 0
    try:
        cluster = json.loads(text).get("cluster", {})
    except (ValueError, AttributeError) as error:
        raise ValueError(
            f"TF_CONFIG is not a JSON object ({error}): {text[:200]!r}. "
            "See docs/distributed.md for its format."
        ) from None
    return len(cluster.get("chief", ())) + len(cluster.get("worker", ()))


def _multi_worker_mirrored_strategy():
    import tensorflow as tf

    class KerasMultiWorkerMirroredStrategy(
        tf.distribute.MultiWorkerMirroredStrategy
    ):
        """`MultiWorkerMirroredStrategy` whose `reduce` fits Keras 3's `fit`.

        Keras 3.x `fit` asks this strategy to reduce a whole nested batch
        (keras-team/keras#20329) and scalar logs along `axis=0`
        (tensorflow/tensorflow#72388); the collective implementation takes
        one tensor with a real axis. Reducing leaf by leaf, scalars without
        an axis, gives the values Keras expects; gradients still go through
        TensorFlow's own collectives untouched.
        """

        def reduce(self, reduce_op, value, axis=None):
            parent = super().reduce

            def reduce_leaf(leaf):
                rank = self.experimental_local_results(leaf)[0].shape.rank
                return parent(reduce_op, leaf, axis=axis if rank else None)

            return tf.nest.map_structure(reduce_leaf, value)

    return KerasMultiWorkerMirroredStrategy()
