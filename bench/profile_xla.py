"""Self time per XLA op of a jitted JAX function, grouped by what it computes.

`XlaProfile(jitted, args)` compiles `jitted` for `args` and reads the
optimized HLO of that program; `run()` then calls it once under
`jax.profiler.trace` and returns the self time of each of its ops (XLA:CPU
records one trace event per op it runs when the process starts with
`XLA_FLAGS=--xla_cpu_enable_xprof_traceme=true`, `TRACEME_FLAG`), and
`group(op)` names what the op computes, from the opcodes, constants and
JAX op names (`metadata={op_name=...}`, which carry the Keras layer
names) of the instruction and of every computation it calls (a fusion's
body). A fused op counts in the first group of `RULES` that it does
anything of. Used by `bench/profile_forward.py`.
"""

import collections
import glob
import gzip
import json
import re
import tempfile

TRACEME_FLAG = "--xla_cpu_enable_xprof_traceme=true"
ADDS = "LayerNorm, bias and residual adds, embeddings"

_INSTRUCTION = re.compile(r"^\s*(?:ROOT\s+)?%?([\w.\-]+)\s*=\s*(.*)$")
_OPCODE = re.compile(r"(?:^|[\s}\]])([a-z][\w\-]*)\(")
_REFERENCE = re.compile(r"%([\w.\-]+)")
_OP_NAME = re.compile(r'op_name="([^"]*)"')
_PLUMBING = {"parameter", "constant", "broadcast", "bitcast", "reshape"}
_ELEMENTWISE = {"add", "subtract", "multiply", "divide", "convert",
                "negate", "maximum", "minimum", "sqrt", "tanh"}


def _named(parts):
    """The parts that compute something: XLA may give a shared constant or
    broadcast the op_name of any one of its users, so names are read only
    from these."""
    return [p for p in parts if p["opcode"] not in _PLUMBING]


def _in_attention(part):
    """Inside an attention layer's scope (not its LayerNorm)."""
    scopes = part["op_name"].split("/")[:-1]
    return any("attention" in s and "norm" not in s for s in scopes)


# (group, test on the op's parts and their opcodes): the first that holds
# names the op. The order matters where one fused op does several things.
RULES = (
    # First: XLA expands erf/erfc into exp, compares and selects.
    ("GELU", lambda parts, ops: any(
        "erf" in p["op_name"].rsplit("/", 1)[-1] for p in _named(parts))
     or any(p["gelu_tanh"] for p in parts)),
    # exp(x - max), or the max pass before it.
    ("softmax", lambda parts, ops: "exponential" in ops
     or any(p["max_reducer"] for p in parts)),
    # QK^T and PV are batched over (batch, heads); the weight GEMMs are not.
    ("attention products (QK^T, PV)", lambda parts, ops: any(
        p["opcode"] == "dot" and p["batch_dot"] for p in parts)),
    ("projection GEMMs", lambda parts, ops: "dot" in ops
     or any(p["matmul_call"] for p in parts)),
    # Embedding lookups (and their index clamping) before "mask select".
    (ADDS, lambda parts, ops: "gather" in ops
     or any("_take" in p["op_name"] for p in _named(parts))),
    ("mask select", lambda parts, ops: "select" in ops),
    # The row sums and the division of a softmax; LayerNorm's are outside
    # the attention layer.
    ("softmax", lambda parts, ops: any(
        p["opcode"] in ("reduce", "divide") and _in_attention(p)
        for p in _named(parts))),
    (ADDS, lambda parts, ops: bool(ops & {"reduce", "rsqrt"})),
    # Head split/merge transposes, with the bias add XLA fuses into them.
    ("relayout copies", lambda parts, ops: bool(
        ops & {"copy", "transpose", "slice"})),
    (ADDS, lambda parts, ops: bool(ops & _ELEMENTWISE)),
)
GROUPS = tuple(dict.fromkeys([group for group, _ in RULES] + ["other"]))


def parse_hlo(text):
    """{computation: [instruction, ...]} of an HLO module's text."""
    computations, current = {}, None
    for line in text.splitlines():
        if line and not line[0].isspace() and line.rstrip().endswith("{"):
            names = _REFERENCE.findall(line)
            current = computations.setdefault(names[0] if names else line, [])
            continue
        match = _INSTRUCTION.match(line)
        if current is None or not match or line.lstrip().startswith("//"):
            continue
        name, rest = match.groups()
        opcode = _OPCODE.search(rest)
        op_name = _OP_NAME.search(rest)
        current.append({
            "name": name,
            "opcode": opcode.group(1) if opcode else "",
            "op_name": op_name.group(1) if op_name else "",
            "references": _REFERENCE.findall(rest),
            "batch_dot": "lhs_batch_dims=" in rest,
            "matmul_call": "custom-call" in rest and "matmul" in rest,
            # The constant of GELU's tanh approximation, 0.044715 x^3.
            "gelu_tanh": re.search(r"constant\(0\.04471", rest) is not None,
        })
    # A reduce whose reducer computes a maximum is a softmax's max pass.
    max_reducers = {name for name, body in computations.items()
                    if len(body) <= 4
                    and any(i["opcode"] == "maximum" for i in body)}
    for body in computations.values():
        for instruction in body:
            instruction["max_reducer"] = (
                instruction["opcode"] == "reduce"
                and bool(max_reducers & set(instruction["references"])))
    return computations


def _expand(instruction, computations, seen):
    """The instruction and every instruction of the computations it calls."""
    found = [instruction]
    for reference in instruction["references"]:
        if reference in computations and reference not in seen:
            seen.add(reference)
            for inner in computations[reference]:
                found += _expand(inner, computations, seen)
    return found


def group_of(instruction, computations):
    """The group (one of `GROUPS`) of one op the runtime executes."""
    parts = _expand(instruction, computations, set())
    opcodes = {p["opcode"] for p in parts}
    for group, test in RULES:
        if test(parts, opcodes):
            return group
    return "other"


def self_times(events, module):
    """Counter {hlo_op: self microseconds} of `module`'s ops in a trace."""
    by_thread = collections.defaultdict(list)
    for event in events:
        args = event.get("args") or {}
        if event.get("ph") == "X" and args.get("hlo_module") == module:
            by_thread[event.get("tid")].append(event)
    totals = collections.Counter()
    for thread_events in by_thread.values():
        thread_events.sort(key=lambda e: (e["ts"], -e["dur"]))
        stack = []  # (end time, op) of the ops still open
        for event in thread_events:
            while stack and stack[-1][0] <= event["ts"]:
                stack.pop()
            if stack:  # nested: not its parent's own time
                totals[stack[-1][1]] -= event["dur"]
            op = event["args"]["hlo_op"]
            totals[op] += event["dur"]
            stack.append((event["ts"] + event["dur"], op))
    return totals


class XlaProfile:
    """One compiled program: `run()` traces a call, `group(op)` names ops."""

    groups = GROUPS

    def __init__(self, jitted, args):
        import jax

        self.jitted, self.args = jitted, args
        text = jitted.lower(*args).compile().as_text()
        self.module = re.search(r"HloModule\s+([\w.\-]+)", text).group(1)
        self.computations = parse_hlo(text)
        self.instructions = {i["name"]: i for body in
                             self.computations.values() for i in body}
        jax.block_until_ready(jitted(*args))  # compiled and warm

    def run(self):
        """Counter {op: self microseconds} of one traced call."""
        import jax

        with tempfile.TemporaryDirectory() as directory:
            with jax.profiler.trace(directory, create_perfetto_trace=True):
                jax.block_until_ready(self.jitted(*self.args))
            path = glob.glob(f"{directory}/**/perfetto_trace.json.gz",
                             recursive=True)[0]
            with gzip.open(path) as f:
                trace = json.load(f)
        events = trace["traceEvents"] if isinstance(trace, dict) else trace
        totals = self_times(events, self.module)
        if not totals:
            raise RuntimeError(
                f"no XLA op events of module {self.module} in the trace: "
                f"start the process with XLA_FLAGS={TRACEME_FLAG}")
        return totals

    def group(self, op):
        if op not in self.instructions:
            return "other"
        return group_of(self.instructions[op], self.computations)
