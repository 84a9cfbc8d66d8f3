"""DNNFusion-style fusion planning on linalg-on-tensors: which ops share one dispatch.

The plan is built the way DNNFusion explores it (../shared/seeds/001, "heuristic fusion plan
exploration"): seeds are the Many-to-Many ops (reductions first, then contractions); each seed
grows along its successors, then along its predecessors; a candidate joins when the mapping
types of the group and the candidate combine (the table below) and the join is legal. Ops no
seed reached become seeds themselves, in program order. Every decision is recorded with its
reason, so a person can see why each fusion was taken or refused.

Legality, beyond the table (what IREE's CPU codegen accepts, STACK.md item 5):
- never two contraction roots (matmul/conv-like) in one group, except a chain of small
  matvecs (vector results, at most ``SMALL_MATVEC_MACS`` each) whose recomputation is cheap:
  IREE tiles the last one as the root and computes the earlier ones whole again for every
  vector tile of it, so the chain is taken while (rows of the new matvec / ``VECTOR_ROWS``) x
  (multiply-adds of the earlier ones) stays under ``MATVEC_RECOMPUTE_MACS``. Squeeze-excite
  is such a chain (pool -> squeeze matvec -> SiLU -> excite matvec -> sigmoid -> scale): on
  narrow blocks its matvecs and the scale become one dispatch instead of two. (Groups of small
  matvecs get their region from the planner, not from IREE: ``form_regions``);
- the group stays convex: no path leaves the group and comes back (that would be a cycle
  between dispatches);
- a producer joins only when all its users are in the group (no recomputation);
- two reductions combine only when they reduce rows of the same parallel shape (LayerNorm's
  mean and variance, like IREE's own softmax dispatch); other Many-to-Many pairs are refused.

The table's "needs profiling" cells (contraction followed by Shuffle/Reorganize, and
One-to-Many producers of a Many-to-Many op) are decided by a small cost model: fuse when it
removes an intermediate tensor without making the group's outputs larger than its inputs
by more than ``max_expand``.

``linalg.fill`` and reshapes are left outside groups on purpose: IREE clones fills into the
dispatches that use them and turns reshapes into free metadata ops.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from math import prod
from typing import Any

from ..analysis.mapping_types import Mapping, MappingType, classify, indexing_maps, loop_sizes

M = MappingType
# DNNFusion's combination table: TABLE[first][second] -> type of the fused pair, None = illegal.
TABLE: dict[MappingType, dict[MappingType, MappingType | None]] = {
    M.ONE_TO_ONE: {
        M.ONE_TO_ONE: M.ONE_TO_ONE,
        M.ONE_TO_MANY: M.ONE_TO_MANY,
        M.MANY_TO_MANY: M.MANY_TO_MANY,
        M.REORGANIZE: M.REORGANIZE,
        M.SHUFFLE: M.SHUFFLE,
    },
    M.ONE_TO_MANY: {
        M.ONE_TO_ONE: M.ONE_TO_MANY,
        M.ONE_TO_MANY: M.ONE_TO_MANY,
        M.MANY_TO_MANY: None,
        M.REORGANIZE: M.ONE_TO_MANY,
        M.SHUFFLE: M.ONE_TO_MANY,
    },
    M.MANY_TO_MANY: {
        M.ONE_TO_ONE: M.MANY_TO_MANY,
        M.ONE_TO_MANY: M.MANY_TO_MANY,
        M.MANY_TO_MANY: None,
        M.REORGANIZE: M.MANY_TO_MANY,
        M.SHUFFLE: M.MANY_TO_MANY,
    },
    M.REORGANIZE: {
        M.ONE_TO_ONE: M.REORGANIZE,
        M.ONE_TO_MANY: M.ONE_TO_MANY,
        M.MANY_TO_MANY: M.MANY_TO_MANY,
        M.REORGANIZE: M.REORGANIZE,
        M.SHUFFLE: M.REORGANIZE,
    },
    M.SHUFFLE: {
        M.ONE_TO_ONE: M.SHUFFLE,
        M.ONE_TO_MANY: M.ONE_TO_MANY,
        M.MANY_TO_MANY: M.MANY_TO_MANY,
        M.REORGANIZE: M.REORGANIZE,
        M.SHUFFLE: M.SHUFFLE,
    },
}
# Cells DNNFusion marks as "needs profiling": legal, but profitable only sometimes.
NEEDS_PROFILING = {
    (M.MANY_TO_MANY, M.SHUFFLE),
    (M.MANY_TO_MANY, M.REORGANIZE),
    (M.ONE_TO_MANY, M.ONE_TO_MANY),
    (M.REORGANIZE, M.MANY_TO_MANY),
    (M.SHUFFLE, M.MANY_TO_MANY),
}
_RESHAPES = {"tensor.expand_shape", "tensor.collapse_shape", "tensor.reshape"}
_OUTSIDE = {"linalg.fill"} | _RESHAPES
# Data movement IREE places itself (pads fused into consumers, concats as in-place updates).
# Measured on IREE 3.13: a region whose root is a tensor.pad computes wrong values (relu+pad),
# and pads/insert_slices chained in one region fail to distribute. They stay in the graph
# (dependencies through them matter for convexity) but never join a group.
_UNFUSABLE = {"tensor.pad", "tensor.insert_slice", "tensor.extract_slice", "tensor.concat"}
# Matvec chains (squeeze-excite). IREE's CPU codegen vectorizes a matvec root 8 rows at a time
# and recomputes a fused producer matvec whole for each such tile. Measured (EfficientNet-B0,
# busy time of the fused dispatch vs the two it replaces, 2 threads): 32..144 channels equal or
# better, 240 channels (recompute 72K multiply-adds) 8-10 us vs 5-7 us plus a dispatch gap of
# 6-8 us, 480 channels (576K) 50 us vs 15 us: the limit sits between the last two.
VECTOR_ROWS = 8
MATVEC_RECOMPUTE_MACS = 1 << 17
# Matvecs up to this size (squeeze-excite's, at most 1152 x 48 = 55K in EfficientNet-B0) count
# as small; a classifier head (1000 x 1280 = 1.3M) does not and stays IREE's.
SMALL_MATVEC_MACS = 1 << 17


@dataclass
class Node:
    index: int
    op: Any  # ir.Operation; None once the plan is detached from its module
    mapping: Mapping
    name: str = ""
    result_type: str = ""
    producers: list[int] = field(default_factory=list)
    consumers: list[int] = field(default_factory=list)
    indirect: set[int] = field(default_factory=set)  # producers read through tensor.extract
    used_outside: bool = False  # a result reaches an op that is not a node (return, export)
    group: int | None = None
    matvec_macs: int = 0  # multiply-adds of a small matvec (see ``matvec_macs``), else 0


@dataclass
class Group:
    index: int
    seed: int
    members: list[int]
    type: MappingType
    contractions: int = 0
    matvecs: int = 0  # how many of the contractions are matvecs (``matvec_macs`` > 0)
    matvec_macs: int = 0  # their multiply-adds
    reductions: list[int] = field(default_factory=list)
    history: list[MappingType] = field(default_factory=list)  # type after each join
    delegated: bool = False  # left for IREE's own dispatch formation
    why_delegated: str = ""  # when it is not the rule's default (e.g. dynamic shapes)


# Why a group with a dynamic dim is left to IREE: a region of it would need its results'
# sizes as operands, which IREE's own dispatch formation computes and ours does not.
DYNAMIC_SHAPES = "dynamic shapes: left to IREE's dispatch formation"


@dataclass
class Decision:
    group: int
    node: int
    direction: str  # "seed", "successor", "predecessor"
    taken: bool
    reason: str


@dataclass
class FusionPlan:
    nodes: list[Node]
    groups: list[Group]
    decisions: list[Decision]
    tiling: list[Any] = field(default_factory=list)  # data_tiling.TilingDecision per contraction
    pad_shares: list[Any] = field(default_factory=list)  # pad_sharing.PadShare per multi-use pad
    conv_tiles: list[Any] = field(default_factory=list)  # conv_tiling.ConvTile per conv group
    # lowering.TileDecision per permuting copy / one-row matmul / plain matmul outside regions
    transpose_tiles: list[Any] = field(default_factory=list)
    gemv_tiles: list[Any] = field(default_factory=list)
    matmul_tiles: list[Any] = field(default_factory=list)
    pad_placements: list[Any] = field(default_factory=list)  # pads.PadPlacement per top pad
    # accumulator_packs.AccumulatorPack per reduction-region result folded into an accumulator
    accumulator_packs: list[Any] = field(default_factory=list)

    def detach(self) -> FusionPlan:
        """Drop the references to IR ops (kept: names, types, groups, decisions), so the plan
        outlives its module (reports read it after IREE's context is gone)."""
        for node in self.nodes:
            node.op = None
        return self

    def group_ops(self) -> list[list[Any]]:
        return [[self.nodes[i].op for i in sorted(g.members)] for g in self.groups]

    def summary(self) -> dict[str, int]:
        taken = sum(d.taken for d in self.decisions if d.direction != "seed")
        refused = sum(not d.taken for d in self.decisions)
        out = {
            "ops": len(self.nodes),
            "groups": len(self.groups),
            "fused": taken,
            "refused": refused,
        }
        if self.tiling:
            out["data_tiled"] = sum(t.tiled for t in self.tiling)
            out["plain"] = sum(not t.tiled for t in self.tiling)
        if self.pad_shares:
            out["pads_shared"] = sum(s.taken for s in self.pad_shares)
        if self.conv_tiles:
            out["convs_tiled"] = sum(t.taken for t in self.conv_tiles)
        if self.transpose_tiles:
            out["transposes_tiled"] = sum(t.taken for t in self.transpose_tiles)
        if self.gemv_tiles:
            out["gemvs_tiled"] = sum(t.taken for t in self.gemv_tiles)
        if self.matmul_tiles:
            out["matmuls_tiled"] = sum(t.taken for t in self.matmul_tiles)
        if self.pad_placements:
            out["pads_in_readers"] = sum(p.fused for p in self.pad_placements)
        if self.accumulator_packs:
            out["accumulator_packs_separated"] = sum(a.separated for a in self.accumulator_packs)
        dynamic = sum(g.why_delegated == DYNAMIC_SHAPES for g in self.groups)
        if dynamic:
            out["left_to_iree_dynamic"] = dynamic
        return out


def _reaches_non_node(value: Any, index_of: dict[Any, int]) -> bool:
    for use in value.uses:
        user = use.owner.operation
        if user in index_of:
            continue
        if user.name in _RESHAPES:
            if any(_reaches_non_node(r, index_of) for r in user.results):
                return True
            continue
        if user.parent is not None and user.parent.operation in index_of:
            continue  # read inside a node's body (a gather's table)
        return True
    return False


def _captured(op: Any) -> list[Any]:
    """Values used inside ``op``'s regions but defined outside it."""
    found: list[Any] = []
    for region in op.regions:
        for block in region.blocks:
            for inner in block.operations:
                for v in inner.operation.operands:
                    owner = v.owner
                    parent = getattr(owner, "operation", None)
                    if parent is None:  # a block argument: of this body, or of the function
                        continue
                    if parent.parent is not None and parent.parent.operation == op:
                        continue
                    if v not in found:
                        found.append(v)
                found.extend(_captured(inner.operation))
    return found


def _shape(value: Any) -> tuple[int, ...]:
    t = value.type
    return tuple(t.shape) if hasattr(t, "shape") else ()


def matvec_macs(op: Any, mapping: Mapping) -> int:
    """Multiply-adds of a small matvec: a contraction with a vector result (at most one
    non-unit dim) and at most ``SMALL_MATVEC_MACS`` multiply-adds; else 0 (also when a loop
    size is unknown)."""
    if not mapping.is_contraction or len(op.results) != 1:
        return 0
    if sum(d != 1 for d in _shape(op.results[0])) > 1:
        return 0
    maps = indexing_maps(op)
    sizes = loop_sizes(op)
    if not maps or len(sizes) != maps[0].n_dims:
        return 0
    work = prod(sizes.values())
    return work if work <= SMALL_MATVEC_MACS else 0


def _unit_free(shape: tuple[int, ...]) -> list[int]:
    return [d for d in shape if d != 1]


def _elems(op: Any) -> int:
    total = 0
    for r in op.results:
        n = 1
        for d in _shape(r):
            n *= max(d, 1)
        total += n
    return total


class Planner:
    def __init__(self, block: Any, max_expand: float = 4.0) -> None:
        self.max_expand = max_expand
        self.nodes: list[Node] = []
        self.groups: list[Group] = []
        self.decisions: list[Decision] = []
        index_of: dict[Any, int] = {}
        for op in block.operations:
            op = op.operation
            mapping = classify(op)
            if mapping is None or op.name in _OUTSIDE:
                continue
            node = Node(len(self.nodes), op, mapping, op.name, str(op.results[0].type))
            node.matvec_macs = matvec_macs(op, mapping)
            index_of[op] = node.index
            self.nodes.append(node)
        # Edges, looking through reshapes/fills (free views / cloned inits) to real producers.
        # Values a body captures from above (gathers' tables) are edges too, but "indirect":
        # the whole tensor must exist before the reading dispatch starts.
        # (producer, consumer) edges through a reshape that splits or merges real dims
        self.reshaped: set[tuple[int, int]] = set()
        for node in self.nodes:
            direct = list(node.op.operands)
            for operand in direct + _captured(node.op):
                for p, reshaped in self._producer_nodes(operand, index_of):
                    if operand not in direct:
                        node.indirect.add(p)
                    if reshaped:
                        self.reshaped.add((p, node.index))
                    if p not in node.producers:
                        node.producers.append(p)
                        self.nodes[p].consumers.append(node.index)
        for node in self.nodes:
            node.used_outside = any(_reaches_non_node(r, index_of) for r in node.op.results)
        self.ancestors = [0] * len(self.nodes)
        for node in self.nodes:  # program order is a topological order
            acc = 0
            for p in node.producers:
                acc |= self.ancestors[p] | (1 << p)
            self.ancestors[node.index] = acc

    @staticmethod
    def _producer_nodes(
        value: Any, index_of: dict[Any, int], reshaped: bool = False
    ) -> list[tuple[int, bool]]:
        """The node producing ``value`` through any reshapes, and whether one of them splits
        or merges dims above 1 (MiniLM at batch 8: a residual add on 1024x384 rows, then
        LayerNorm on 8x128x384). Adding or dropping unit dims (the same chain at batch 1) does
        not count: IREE folds it away."""
        owner = value.owner
        if not hasattr(owner, "name") or not hasattr(owner, "operands"):
            return []  # block argument
        owner = owner.operation
        if owner in index_of:
            return [(index_of[owner], reshaped)]
        if owner.name in _RESHAPES:
            source = owner.operands[0]
            real = reshaped or _unit_free(_shape(source)) != _unit_free(_shape(value))
            return Planner._producer_nodes(source, index_of, real)
        return []

    # -- legality and profit -------------------------------------------------------------
    def _bits(self, group: Group) -> int:
        bits = 0
        for m in group.members:
            bits |= 1 << m
        return bits

    def _check(self, group: Group, cand: Node, direction: str) -> str | None:
        """None if ``cand`` may join ``group``, else the reason it may not."""
        if cand.group is not None:
            return f"already in group {cand.group}"
        if cand.name in _UNFUSABLE or self.nodes[group.seed].name in _UNFUSABLE:
            return (
                "data movement (pad/slice/concat) is left to IREE (a pad as a region root "
                "miscompiles in IREE 3.13)"
            )
        first, second = (
            (group.type, cand.mapping.type)
            if direction == "successor"
            else (cand.mapping.type, group.type)
        )
        recompute = self._matvec_recompute(group, cand)
        matvec_chain = recompute is not None and recompute <= MATVEC_RECOMPUTE_MACS
        if cand.mapping.is_contraction and group.contractions and not matvec_chain:
            if recompute is not None:
                return (
                    f"matvec chain: recomputing the group's matvecs per vector tile costs "
                    f"{recompute} multiply-adds (> {MATVEC_RECOMPUTE_MACS})"
                )
            return "two contraction roots in one dispatch (IREE CPU codegen rejects it)"
        combined = TABLE[first][second]
        if combined is None and not (self._rows_compatible(group, cand) or matvec_chain):
            return f"{first.value} + {second.value} is not fusible (DNNFusion table)"
        if cand.mapping.root == "reduction" and group.contractions:
            return "a reduction after a contraction needs its full rows (not fusible)"
        if cand.mapping.root == "contraction" and group.reductions:
            return "a contraction after a reduction (not fusible)"
        if (group.reductions or cand.mapping.root == "reduction") and self._reshaped_to(
            group, cand
        ):
            return (
                "a reshape that splits or merges dims lies between it and the group's "
                "reductions: IREE cannot tile through it and keeps the whole tensor on the stack"
            )
        bits = self._bits(group)
        if any((bits >> p) & 1 for p in cand.indirect):
            return "it gathers from a tensor the group computes (needs the whole tensor first)"
        if any(cand.index in self.nodes[m].indirect for m in group.members):
            return "the group gathers from its result (needs the whole tensor first)"
        if direction == "successor":
            root = max(group.members)
            if not (self.ancestors[cand.index] >> root) & 1:
                return "a sibling of the group's root, not its consumer (one root per dispatch)"
            for p in cand.producers:
                if not (bits >> p) & 1 and self.ancestors[p] & bits:
                    return f"convexity: its operand from op {p} depends on the group"
        else:
            outside = [c for c in cand.consumers if not (bits >> c) & 1]
            if cand.used_outside:
                return "its result is also returned/exported (would recompute)"
            if outside:
                return f"has {len(outside)} user(s) outside the group (would recompute)"
            for p in cand.producers:
                if self.ancestors[p] & bits:
                    return "convexity: it depends on the group"
        if (first, second) in NEEDS_PROFILING:
            return self._cost_model(group, cand, direction)
        return None

    def _reshaped_to(self, group: Group, cand: Node) -> bool:
        """Whether an edge between ``cand`` and a member of ``group`` crosses a real reshape."""
        return any(
            (m, cand.index) in self.reshaped or (cand.index, m) in self.reshaped
            for m in group.members
        )

    @staticmethod
    def _matvec_recompute(group: Group, cand: Node) -> int | None:
        """When ``cand`` is a small matvec and ``group``'s contractions are all small matvecs:
        the multiply-adds spent recomputing them once per vector tile of ``cand`` (see the
        module docstring). None otherwise."""
        if not (cand.matvec_macs and group.contractions and group.matvecs == group.contractions):
            return None
        return -(-max(_elems(cand.op), 1) // VECTOR_ROWS) * group.matvec_macs

    def _rows_compatible(self, group: Group, cand: Node) -> bool:
        """Two plain reductions over rows of the same parallel shape (LayerNorm mean/var)."""
        if cand.mapping.root != "reduction" or not group.reductions or group.contractions:
            return False
        shapes = {_shape(self.nodes[r].op.results[0]) for r in group.reductions}
        return (
            len(shapes) == 1
            and _shape(cand.op.results[0]) in shapes
            and cand.name == "linalg.generic"
            and all(self.nodes[r].name == "linalg.generic" for r in group.reductions)
        )

    def _cost_model(self, group: Group, cand: Node, direction: str) -> str | None:
        if (
            group.contractions
            and direction == "successor"
            and cand.mapping.type
            in (
                M.SHUFFLE,
                M.REORGANIZE,
            )
        ):
            # Measured: IREE's CPU codegen fails to distribute a contraction whose result is
            # stored permuted (with data tiling, a map_store of the encoded tile).
            return "a permuted/reorganized store after a contraction (IREE CPU codegen rejects)"
        if group.contractions and direction == "predecessor":
            # Measured: a permuted operand fused into a matmul is materialized per tile on the
            # stack (51 KB for BERT's attention, over IREE's 32 KB limit); IREE folds plain
            # transposes into the contraction's indexing maps by itself.
            return "a permuted/reorganized operand of a contraction (tile copy on the stack)"
        biggest = max(_elems(self.nodes[m].op) for m in group.members)
        if _elems(cand.op) > self.max_expand * biggest:
            return (
                f"cost model: output grows {_elems(cand.op) / biggest:.1f}x "
                f"(> {self.max_expand}x), fusing would recompute broadcast work"
            )
        return None

    # -- exploration ---------------------------------------------------------------------
    def _join(self, group: Group, node: Node, direction: str) -> None:
        first, second = (
            (group.type, node.mapping.type)
            if direction == "successor"
            else (node.mapping.type, group.type)
        )
        combined = TABLE[first][second] or M.MANY_TO_MANY
        group.type = combined
        group.history.append(combined)
        group.members.append(node.index)
        node.group = group.index
        if node.mapping.is_contraction:
            group.contractions += 1
            group.matvecs += node.matvec_macs > 0
            group.matvec_macs += node.matvec_macs
        elif node.mapping.root == "reduction":
            group.reductions.append(node.index)

    def _grow(self, group: Group, direction: str) -> None:
        frontier = sorted(
            {
                n
                for m in group.members
                for n in (
                    self.nodes[m].consumers if direction == "successor" else self.nodes[m].producers
                )
            }
            - set(group.members),
            reverse=direction != "successor",
        )
        seen = set(group.members)
        while frontier:
            idx = frontier.pop(0)
            if idx in seen:
                continue
            seen.add(idx)
            cand = self.nodes[idx]
            if cand.group == group.index:
                continue
            why_not = self._check(group, cand, direction)
            if cand.group is not None:
                continue  # already planned elsewhere: not a decision worth recording
            self.decisions.append(
                Decision(group.index, idx, direction, why_not is None, why_not or "legal")
            )
            if why_not is not None:
                continue
            self._join(group, cand, direction)
            nxt = cand.consumers if direction == "successor" else cand.producers
            frontier = sorted(set(frontier) | (set(nxt) - seen), reverse=direction != "successor")

    def _seed(self, node: Node, why: str) -> None:
        group = Group(len(self.groups), node.index, [], node.mapping.type)
        self.groups.append(group)
        self._join(group, node, "seed")
        group.type = node.mapping.type
        self.decisions.append(Decision(group.index, node.index, "seed", True, why))
        self._grow(group, "successor")
        self._keep_one_root(group)
        self._grow(group, "predecessor")

    def _escapes(self, group: Group, m: int) -> bool:
        node = self.nodes[m]
        return node.used_outside or any(c not in group.members for c in node.consumers)

    def _keep_one_root(self, group: Group) -> None:
        """Undo the latest successor joins until only the root's result leaves the group:
        IREE's dispatches store what their root computes, not a second intermediate."""
        while len(group.members) > 1:
            root = max(group.members)
            leaking = [m for m in group.members if m != root and self._escapes(group, m)]
            if not leaking:
                return
            last = group.members.pop()
            group.history.pop()
            group.type = group.history[-1]
            node = self.nodes[last]
            node.group = None
            if node.mapping.is_contraction:
                group.contractions -= 1
                group.matvecs -= node.matvec_macs > 0
                group.matvec_macs -= node.matvec_macs
            elif last in group.reductions:
                group.reductions.remove(last)
            for d in reversed(self.decisions):
                if d.node == last and d.group == group.index and d.taken:
                    d.taken = False
                    d.reason = f"undone: op {leaking[0]}'s result would also leave the dispatch"
                    break

    def plan(self) -> FusionPlan:
        contractions = [n for n in self.nodes if n.mapping.is_contraction]
        reductions = [
            n
            for n in self.nodes
            if n.mapping.type == M.MANY_TO_MANY and not n.mapping.is_contraction
        ]
        # Reductions seed first: a row reduction needs its elementwise neighbours in its own
        # dispatch (LayerNorm's normalize between its two reductions), while a contraction
        # taking them as a prologue/epilogue only moves work around (GPT-2: the normalize was
        # taken by the next matmul, splitting LayerNorm into two dispatches).
        for node in reductions:
            if node.group is None:
                self._seed(node, "seed: reduction (Many-to-Many)")
        for node in contractions:
            if node.group is None:
                self._seed(node, "seed: contraction (Many-to-Many)")
        for node in self.nodes:
            if node.group is None:
                self._seed(node, f"seed: left over ({node.mapping.type.value})")
        return FusionPlan(self.nodes, self.groups, self.decisions)


def plan_block(block: Any, max_expand: float = 4.0) -> FusionPlan:
    """Plan the fusion of the ops of one block (a function body)."""
    return Planner(block, max_expand).plan()
