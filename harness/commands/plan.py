"""``stormatrix plan``: expand and validate a matrix; show the cells, what is skipped and why, the ETA."""

from __future__ import annotations

import argparse
import sys

from ..backends.base import plans_boot_ahead, plans_restore
from ..cells import expand
from ..core.model import NOT_APPLICABLE
from ..progress import estimate_seconds, fmt_duration
from ..registry import backend_class, check_executor_spec, load_spec
from ..repeats import possible_extra
from ..runorder import draw_seed, ordered_cells
from ..guestdrivers import awaiting_guest_facts
from ..spec import check_guest_backend


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("plan", help="expand and validate a matrix file; print cells, skipped cells and the ETA",
                       description="Expand MATRIX into cells, reject impossible combinations with the reason, "
                                   "and print the cell list with an ETA. Exit code 2 on a bad matrix.")
    p.add_argument("matrix", help="matrix file (TOML)")
    p.add_argument("--quiet", action="store_true", help="only the summary line")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    spec = load_spec(args.matrix)
    check_guest_backend(spec)
    check_executor_spec(spec)
    cls = backend_class(spec.run["backend"])
    cls.host(spec)  # [host]: a scope or CPU set this backend cannot measure is refused at plan time
    plan = expand(spec, backend_controllers=cls.controllers)
    # the backend's own notes (CPU placement, storage, the host settings a CPU-set scope changes), asked before
    # anything is printed: a backend may refuse the matrix here (a node that cannot be steered), --quiet or not
    backend_notes = cls.plan_notes(spec)
    out = sys.stdout
    timing = spec.timing
    order, seed = spec.run["order"], spec.run["seed"] or draw_seed()
    if not args.quiet:
        print(f"{'#':>4}  {'controller':<19} {'aio':<9} {'iothread':<8} {'cache':<11} {'workload':<24} rep", file=out)
        for i, c in enumerate(ordered_cells(plan.cells, order, seed), 1):
            w, d = c.workload, c.disk
            iothread = NOT_APPLICABLE if d.iothread is None else "on" if d.iothread else "off"
            print(f"{i:>4}  {d.controller:<19} {d.aio or NOT_APPLICABLE:<9} {iothread:<8} "
                  f"{d.cache or NOT_APPLICABLE:<11} {w.name:<24} {c.repeat}", file=out)
        if plan.skipped:
            print(f"\nskipped ({len(plan.skipped)}):", file=out)
            for s in plan.skipped:
                print(f"  {s.disk.key}: {s.reason}", file=out)
        notes = list(plan.notes) + backend_notes
        if notes:
            print("\nnotes:", file=out)
            for note in notes:
                print(f"  {note}", file=out)
        print("\nworkloads:", file=out)
        for w in spec.workloads:
            print(f"  {w.name}: {w.describe()}", file=out)
    ahead = plans_boot_ahead(cls, spec)
    eta = estimate_seconds(plan, timing.ramp_s, timing.measure_s, boot_ahead=ahead, restore=plans_restore(cls, spec))
    configs = len({(c.disk, c.repeat) for c in plan.cells})
    booted = f", {configs - 1} of them booted ahead" if ahead and configs > 1 else ""
    print(f"\n{len(plan.cells)} cells ({configs} VM starts{booted}, {len(plan.skipped)} skipped) on backend "
          f"{spec.run['backend']}; {timing.ramp_s:g} s warm-up + {timing.measure_s:g} s window per cell; "
          f"ETA {fmt_duration(eta)}", file=out)
    virtio = awaiting_guest_facts(spec, plan.cells)
    if virtio:
        need = "needs" if len(virtio) == 1 else "need"
        print(f"{len(virtio)} of them {need} a virtio-win driver ([run] guest_drivers not set): they run only "
              "if the guest's driver store has it at the first boot, else they are skipped with the reason",
              file=out)
    print(order_line(order, seed, bool(spec.run["seed"]), max(c.repeat for c in plan.cells)), file=out)
    extra = possible_extra(plan, spec.run)
    if extra:
        run = spec.run
        configs_n = len({(c.disk, c.workload) for c in plan.cells})
        per_cell = eta / len(plan.cells)
        budget = run["time_budget_minutes"]
        most = eta + per_cell * extra
        capped = f", capped by time_budget_minutes = {budget:g}" if budget and most > budget * 60 else ""
        first = ("first to both sides of every comparison the findings rest on that is still within noise (the "
                 "best vs the runner-up and each controller's aio modes on the workbook's bootstrap share; native "
                 "vs threads on the I/O-path switches per I/O, Welch 95 %, as the Answer page decides it), then "
                 if run["repeat_policy"] == "verdicts" else "")
        print(f"extra repeats ([run] repeat_policy = {run['repeat_policy']}): {first}to a configuration whose CV of "
              f"CPU or ctx per MiB is above cv_limit_pct = {run['cv_limit_pct']:g} %, up to max_repeats = "
              f"{run['max_repeats']}: up to {extra} more cells ({configs_n} configurations x "
              f"{run['max_repeats'] - run['repeats']}); ETA up to "
              f"{fmt_duration(max(eta, min(most, budget * 60)) if capped else most)}{capped}"
              + (f"; budget: as many as fit in time_budget_minutes = {budget:g} at the measured pace, most needed "
                 "first" if budget else ""), file=out)
    return 0


def order_line(order: str, seed: int, seed_set: bool, rounds: int) -> str:
    """How the cells listed above will run (``[run] order`` and ``seed``: stormatrix.runorder)."""
    if order == "grouped":
        return ("order: grouped ([run] order): each configuration's repeats one after another, in matrix order, "
                "as listed")
    which = (f"seed {seed} ([run] seed)" if seed_set else
             f"listed for seed {seed}; the run draws its own seed and journals it (set [run] seed = {seed} to run "
             "exactly this order)")
    return (f"order: rounds ([run] order): {rounds} round(s), each configuration once per round (round n = repeat "
            f"n), shuffled per round; {which}; a resumed run keeps its order")
