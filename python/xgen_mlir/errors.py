"""Errors xgen_mlir raises to users.

Every failure a user can cause (bad input, unsupported ops, unknown names, a corrupt
artifact) becomes one of these, with a message that names the problem and where.
Nothing below should let a raw MLIR/IREE traceback reach the user.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path


class XGenError(Exception):
    """Base class of all user-facing xgen_mlir errors."""


class FrontendError(XGenError):
    """A model could not be imported (bad file, export failure, ...)."""


@dataclass
class UnsupportedOp:
    """One occurrence of an op that cannot be imported or lowered."""

    name: str
    location: str = "unknown location"


@dataclass
class UnsupportedOpsError(FrontendError):
    """All ops that stop a model from being lowered, reported at once, by name, with counts."""

    occurrences: list[UnsupportedOp] = field(default_factory=list)
    stage: str = "lowering"

    def __post_init__(self) -> None:
        super().__init__(self._format())

    def counts(self) -> Counter[str]:
        return Counter(o.name for o in self.occurrences)

    def _format(self) -> str:
        counts = self.counts()
        total = sum(counts.values())
        lines = [
            f"{total} unsupported op occurrence(s) of {len(counts)} kind(s) "
            f"found during {self.stage}:"
        ]
        for name, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
            locs = [o.location for o in self.occurrences if o.name == name]
            shown = "; ".join(locs[:3]) + (f"; ... {len(locs) - 3} more" if len(locs) > 3 else "")
            lines.append(f"  {name} x{n}  at {shown}")
        return "\n".join(lines)


class MLIRParseError(XGenError):
    """Malformed MLIR text or bytecode (message carries the file:line:col diagnostics)."""


class UnknownNameError(XGenError, KeyError):
    """An unknown pass, pipeline or target name; the message lists the known ones."""

    def __init__(self, kind: str, name: str, known: list[str]) -> None:
        self.kind, self.name, self.known = kind, name, sorted(known)
        plural = kind + ("es" if kind.endswith("s") else "s")
        XGenError.__init__(
            self, f"unknown {kind} '{name}'; known {plural}: {', '.join(self.known)}"
        )

    def __str__(self) -> str:  # KeyError would quote the message otherwise
        return self.args[0]


class PipelineError(XGenError):
    """A pass pipeline failed; the message names the failing step, then either where its input
    IR was kept and the command that reproduces the failure, or how to keep it."""

    def __init__(
        self, message: str, reproducer: str | None = None, kept: Path | None = None
    ) -> None:
        self.reproducer, self.kept = reproducer, kept
        super().__init__(message + (f"\nreproduce with:\n  {reproducer}" if reproducer else ""))


class BackendCompileError(XGenError):
    """IREE refused to compile the module (message carries IREE's diagnostics). ``kept``: the
    folder with IREE's input, when the user asked to keep it. ``winograd_convs``: how many
    Winograd convs the module held (``compile()`` retries without them)."""

    winograd_convs = 0

    def __init__(self, message: str, kept: Path | None = None) -> None:
        self.kept = kept
        super().__init__(message)


class CacheError(XGenError):
    """A cache folder cannot be created, read or written (the message names it and how to
    point the cache elsewhere)."""


class ModuleLoadError(XGenError):
    """A .vmfb file is missing, truncated, corrupt or not loadable on the chosen device."""


class FallbackWarning(UserWarning):
    """A step fell back (IREE rejected a fusion step, a generated kernel is not used): the
    module is correct but not what was asked for. Said once per cause; the report has it too."""


class InputMismatchError(XGenError, ValueError):
    """Call-time inputs do not match the compiled signature (count, shape or dtype)."""


class ModuleCallError(XGenError):
    """A loaded module failed while running: IREE's runtime reported an error, or (with
    ``load(..., isolated=True)``) the process running it died; ``signal`` names the signal
    that killed it (e.g. ``"SIGSEGV"``), None otherwise. The message names the file and entry."""

    def __init__(self, message: str, signal: str | None = None) -> None:
        self.signal = signal
        super().__init__(message)
