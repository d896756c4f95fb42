#!/usr/bin/env python3
"""bench/planner.py — the planner's figures (issue 3), measured with the built memgrad binary.

  python3 bench/planner.py [--memgrad build-release/memgrad] [--out bench/results/planner.md]
                           [--sections checkmate,layered,minimalloc,growth,examples,torch] [--reuse-exact FILE]

--out FILE rewrites only the sections measured in FILE, keeps its other sections as they were,
and regenerates its header (when, on which commit and under what load each section was measured).
--reuse-exact FILE takes the MILP's columns (exact/once, bound/once, exact solve s) of the
Checkmate table from an earlier results file instead of running the MILP again (it is most of
the half hour); a point whose budget label differs there is solved afresh.

Sections: Checkmate training graphs at 90..40% of the store-all peak and at the minimum
feasible budget (auto vs sqrt vs exact, the MILP, and the best lower bound it proves); Moccasin's layered DAGs at
0.8x and 0.9x of the no-recompute peak; MiniMalloc's eleven allocation instances (the arena alone); auto's solve time against joint-graph size (~100, ~1,000,
~10,000 nodes) and its growth rate; every example model's store-all and minimum feasible budget
and its overhead at 75/50/33/25% (sqrt, auto, exact); PyTorch's checkpointing beside memgrad on
the example models bench/torch_models.py has (torch_checkpoint.py). Every plan is checked by
memgrad's verifier (--verify). Solve times are medians of 3 runs with the plan cache off.
"""
import argparse, datetime, json, math, os, re, resource, statistics, subprocess, sys, tempfile, time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def run(mg, args):
    p = subprocess.run([mg] + args + ["--no-cache"], capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr


def plan(mg, target, budget=None, solver="auto", graph=False, repeat=3, time_limit=None, extra=()):
    args = ["plan"] + (["--graph", target] if graph else [target]) + ["--format", "json", "--verify", "--solver", solver]
    args += list(extra)
    if time_limit is not None:
        args += ["--time-limit", str(time_limit)]
    if budget is not None:
        args += ["--budget", f"{budget}B"]
    times, cpus, walls, out = [], [], [], None
    for _ in range(repeat):
        r0, w0 = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
        rc, so, se = run(mg, args)
        r1, w1 = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
        cpus.append(r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime)
        walls.append(w1 - w0)
        if rc != 0:
            return None
        if "plan verified" not in se:
            sys.exit(f"plan of {target} not verified: {se}")
        out = json.loads(so)
        times.append(out["solve_seconds"])
    out["median_seconds"] = statistics.median(times)
    out["median_cpu_seconds"] = statistics.median(cpus)  # the whole process (load, plan, verify, write)
    out["median_wall_seconds"] = statistics.median(walls)
    return out


def pct(x):
    return f"{100 * x:.2f}%"


EXACT_SECONDS = 30


def old_exact(path):
    """The MILP's columns of an earlier Checkmate table: (graph, budget label) -> (exact cell, bound, seconds)."""
    rows = {}
    if not path:
        return rows
    for line in open(path):
        c = [x.strip() for x in line.strip().strip("|").split("|")]
        if len(c) == 10 and c[3] and c[4] and not c[3].startswith("infeasible") and c[0] != "graph":
            try:
                rows[(c[0], c[2])] = (c[4], float(c[5]), float(c[9]))
            except ValueError:
                pass
    return rows


def checkmate(mg, lines, reuse=None):
    reused = old_exact(reuse)
    lines.append("Budgets are fractions of the store-all workspace. `auto/once` is the cost `auto` executes over "
                 "the cost of running every op once. `exact` is Checkmate's MILP solved by CBC with a "
                 f"{EXACT_SECONDS} s limit, started from auto's plan: `exact/once` is its plan's cost (✓ when proven "
                 "optimal within Checkmate's class) and `bound/once` the best lower bound proven for every schedule "
                 "(`flops_lower_bound`): the relaxed program's (`exact` gives it 80% of the time left after auto's solve) or the one memgrad "
                 "proves itself (values that cannot stay resident across some step are recomputed, and what must be rebuilt after steps where the live values do not fit: bound_step.c, bound_cut.c), whichever is "
                 "larger (at least 1: every op runs once; the MILP's own bound covers only its class and is not used). "
                 "`auto/bound` is therefore an upper bound on auto's distance from the optimum. `sqrt` is Chen et "
                 "al.'s checkpointing (\"—\": its plan does not fit).\n")
    if reuse:
        lines.append(f"The MILP's columns are taken from an earlier run ({os.path.basename(reuse)}); auto's and sqrt's "
                     "are measured now.\n")
    lines.append("| graph | nodes | budget | auto/once | exact/once | bound/once | auto/bound | sqrt/once | auto solve s "
                 "| exact solve s |")
    lines.append("|---|---|---|---|---|---|---|---|---|---|")
    d = os.path.join(ROOT, "bench/data/checkmate")
    for name in ["vgg16", "vgg19", "unet", "fcn8", "segnet", "mobilenet", "resnet50"]:
        f = os.path.join(d, name + ".json")
        base = plan(mg, f, graph=True, repeat=1)
        all_b, minf = base["store_all_workspace_bytes"], base["min_feasible_bytes"]
        for frac in [0.9, 0.8, 0.7, 0.6, 0.5, 0.4, None]:
            b = minf if frac is None else int(all_b * frac)
            label = "min feasible ({:.0f}%)".format(100 * minf / all_b) if frac is None else f"{int(frac * 100)}%"
            if b < minf:
                lines.append(f"| {name} | {len(base['nodes'])} | {label} | infeasible (min {100 * minf / all_b:.0f}%) "
                             "| | | | | | |")
                continue
            a = plan(mg, f, b, graph=True)
            s = plan(mg, f, b, solver="sqrt", graph=True, repeat=1)
            once = a["flops_once"]
            old = reused.get((name, label))
            if old:
                re_, bound, esec = old[0], max(old[1] * once, a["flops_lower_bound"], once), old[2]
            else:
                e = plan(mg, f, b, solver="exact", graph=True, repeat=1, time_limit=EXACT_SECONDS)
                re_ = f"{e['flops_executed'] / once:.4f}" + (" ✓" if e["optimal"] is True else "") if e else "—"
                bound = max(e["flops_lower_bound"] if e else once, a["flops_lower_bound"], once)
                esec = e["solve_seconds"] if e else 0
            ra = a["flops_executed"] / once
            rs = f"{s['flops_executed'] / once:.4f}" if s else "—"
            lines.append(f"| {name} | {len(base['nodes'])} | {label} | {ra:.4f} | {re_} | {bound / once:.4f} | "
                         f"{a['flops_executed'] / bound:.4f} | {rs} | {a['median_seconds']:.3f} | {esec:.1f} |")
    lines.append("")


def layered(mg, lines):
    lines.append("Budgets are fractions of the store-all peak of live bytes; a plan's workspace (the arena, its "
                 "waste included) must fit. `solve s` is memgrad's wall-clock solve time (the plan and the minimum "
                 "feasible budget), `CPU s` the CPU time of the whole `memgrad plan` process (medians of 3).\n")
    lines.append("| graph | nodes | min feasible | budget | plan | cost/once | solve s | CPU s |")
    lines.append("|---|---|---|---|---|---|---|---|")
    d = os.path.join(ROOT, "bench/data/layered")
    for n in [100, 250, 500, 1000]:
        f = os.path.join(d, f"layered_n{n}.json")
        base = plan(mg, f, graph=True, repeat=1)
        peak = base["train"]["peak_live_bytes"]
        for frac in [0.9, 0.8]:
            a = plan(mg, f, int(peak * frac), graph=True)
            minf = f"{base['min_feasible_bytes'] / peak:.3f}x"
            if a is None:
                lines.append(f"| layered_n{n} | {n} | {minf} | {frac}x peak | none | | | |")
            else:
                lines.append(f"| layered_n{n} | {n} | {minf} | {frac}x peak | verified | "
                             f"{a['flops_executed'] / a['flops_once']:.4f} | {a['median_seconds']:.3f} | "
                             f"{a['median_cpu_seconds']:.2f} |")
    lines.append("")


MINIMALLOC_SECONDS = 10


def minimalloc(mg, lines):
    lines.append("MiniMalloc's eleven instances (bench/data/minimalloc, from the MiniMalloc paper, ASPLOS 2023), each "
                 "placed by `memgrad arena FILE.csv --capacity 1048576 --format json` with a "
                 f"{MINIMALLOC_SECONDS} s limit: the arena it reaches, whether that fits the capacity, whether the "
                 "search proved it the least arena for those buffers (it stops once the capacity is met), `lower bound` the most bytes live at "
                 "once, `solve s` the allocator's wall-clock time and `CPU s` the whole process's (medians of 3).\n")
    lines.append("| instance | buffers | lower bound | arena | fits | optimal | solve s | CPU s |")
    lines.append("|---|---|---|---|---|---|---|---|")
    d = os.path.join(ROOT, "bench/data/minimalloc")
    nfit = 0
    names = sorted(n for n in os.listdir(d) if n.endswith(".csv"))
    for n in names:
        cap = n.split(".")[1]
        args = [mg, "arena", os.path.join(d, n), "--capacity", cap, "--format", "json",
                "--time-limit", str(MINIMALLOC_SECONDS)]
        outs, cpus = [], []
        for _ in range(3):
            r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
            p = subprocess.run(args, capture_output=True, text=True)
            r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
            if p.returncode not in (0, 1):
                sys.exit(f"memgrad arena {n} failed: {p.stderr}")
            outs.append(json.loads(p.stdout))
            cpus.append(r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime)
        o = outs[0]
        nfit += o["fits"] is True
        solve = statistics.median(x["solve_seconds"] for x in outs)
        lines.append(f"| {n.split('.')[0]} | {o['buffers']} | {o['lower_bound']} | {o['arena_bytes']} | "
                     f"{'yes' if o['fits'] else 'no'} | {'yes' if o['optimal'] is True else 'no'} | {solve:.3f} | "
                     f"{statistics.median(cpus):.2f} |")
    lines.append(f"\n{nfit} of {len(names)} instances fit their capacity.\n")


def chain_model(layers):
    return (f"model chain\ninput x: f32[32, 64]\nh = x\nrepeat {layers} {{\n param w: f32[64, 64] = xavier\n"
            " h = tanh(h @ w)\n}\nloss = mean(h * h)\nminimize loss\n")


def transformer_model(layers):
    """examples/transformer.mg with its layer count changed (None when it has no `repeat N {`)."""
    path = os.path.join(ROOT, "examples", "transformer.mg")
    if not os.path.exists(path):
        return None
    text = open(path).read()
    m = re.search(r"repeat \d+ \{", text)
    return text[:m.start()] + f"repeat {layers} {{" + text[m.end():] if m else None


# (family, description, layer counts, model text of L layers): sized for ~100, ~1,000 and ~10,000
# joint nodes (chain: 6 L + 7; transformer: about 94 L + 26)
GROWTH = [("chain", "`x -> repeat L { h = tanh(h @ w) } -> mean(h * h)`, batch 32, width 64", [16, 166, 1666],
           chain_model),
          ("transformer", "examples/transformer.mg with L layers instead of 6 (attention diamonds, residuals)",
           [1, 10, 106], transformer_model)]


def growth_rate(rows):
    """The exponents of CPU and solve time in the node count between the two largest rows (n, solve, cpu)."""
    (n1, s1, c1), (n2, s2, c2) = rows[-2], rows[-1]
    kc = math.log(c2 / c1) / math.log(n2 / n1) if c1 > 0 and c2 > 0 and n2 != n1 else float("nan")
    ks = math.log(s2 / s1) / math.log(n2 / n1) if s1 > 0 and s2 > 0 and n2 != n1 else float("nan")
    return f"{n1} to {n2} nodes: process CPU time ~ nodes^{kc:.2f}, memgrad's solve time ~ nodes^{ks:.2f}"


def growth(mg, lines, tmp):
    lines.append("Two families of models sized for about 100, 1,000 and 10,000 joint-graph nodes (the training "
                 "step's nodes of the whole batch, counted exactly), planned by `auto` at 50% of their store-all "
                 "workspace: " + "; ".join(f"{fam}: {desc}" for fam, desc, _, _ in GROWTH) + ". `whole batch` "
                 "columns: planned with `--micro-batches 1`, so the graph planned is the one of that size; `auto` "
                 "columns: as `plan` does by default, which may split the batch into parts (a larger graph, "
                 "`joint nodes` then counts the split graph's). `solve s` is memgrad's own "
                 "wall-clock solve time (`solve_seconds`: the plan and the minimum feasible budget); `CPU s` is "
                 "that of the whole `memgrad plan --verify --format json` process (parse, autodiff, "
                 "solve, verify, write), from `getrusage(RUSAGE_CHILDREN)` deltas; medians of 3. What `auto` "
                 "tries depends on the size (docs/planner.md: the chain DP up to 160 stages, the score-perturbed "
                 "restarts fewer above 312 nodes and none above 20,000, split graphs up to 20,000 nodes), so the "
                 "growth rate is that of `auto` as a whole, not of one algorithm.\n")
    lines.append("| model | layers | whole batch: joint nodes | overhead | solve s | CPU s "
                 "| auto: joint nodes | overhead | solve s | CPU s |")
    lines.append("|---|---|---|---|---|---|---|---|---|---|")
    whole_growth, auto_growth = [], []
    for fam, _, sizes, make in GROWTH:
        wrows, arows = [], []
        for layers in sizes:
            text = make(layers)
            if text is None:
                lines.append(f"| {fam} | {layers} | not run: no model text | | | | | | | |")
                continue
            f = os.path.join(tmp, f"{fam}{layers}.mg")
            with open(f, "w") as fh:
                fh.write(text)
            base = plan(mg, f, repeat=1)
            half = base["store_all_workspace_bytes"] // 2 if base else None
            w = plan(mg, f, half, extra=("--micro-batches", "1")) if base else None
            a = plan(mg, f, half) if base else None
            cells = []
            for p, rows in ((w, wrows), (a, arows)):
                if p is None:
                    cells.append("no plan at 50% | | |")
                    continue
                rows.append((len(p["nodes"]), p["median_seconds"], p["median_cpu_seconds"]))
                k = p.get("micro_batches", 1)
                cells.append(f"{len(p['nodes'])}{f' ({k} parts)' if k > 1 else ''} | {pct(p['recompute_overhead'])} | "
                             f"{p['median_seconds']:.3f} | {p['median_cpu_seconds']:.2f}")
            lines.append(f"| {fam} | {layers} | " + " | ".join(cells) + " |")
        if len(wrows) >= 2:
            whole_growth.append(f"{fam}, {growth_rate(wrows)}")
        if len(arows) >= 2:
            auto_growth.append(f"{fam}, {growth_rate(arows)}")
    if whole_growth:
        lines.append("\nGrowth between the two largest sizes, whole batch: " + "; ".join(whole_growth) + ".")
    if auto_growth:
        lines.append("\nGrowth between the two largest sizes, `auto` as `plan` runs it: " + "; ".join(auto_growth) + ".\n")


EXAMPLE_ORDER = ["mlp", "mlp_deep", "cnn_fmnist", "transformer", "resnet18_64", "unet_small"]
EXAMPLE_EXACT_SECONDS = 30
EXACT_MAX_NODES = 400  # CBC does not get past the root of Checkmate's MILP on ~350-node graphs in a minute


def example_models():
    names = [os.path.splitext(n)[0] for n in os.listdir(os.path.join(ROOT, "examples")) if n.endswith(".mg")]
    return [n for n in EXAMPLE_ORDER if n in names] + sorted(n for n in names if n not in EXAMPLE_ORDER)


def mib(b):
    return f"{b / 2**20:.2f}"


def parts(p):
    """A plan's overhead, and its micro-batch part count when it splits the batch."""
    k = p.get("micro_batches", 1)
    return pct(p["recompute_overhead"]) + (f" ({k} parts)" if k > 1 else "")


def waste(p):
    """A plan's workspace over its peak of live bytes."""
    return f"{p['workspace_bytes'] / p['peak_live_bytes']:.3f}"


def examples(mg, lines):
    lines.append("Every `examples/*.mg`. `store-all` is the workspace (the arena) and the peak of live bytes of the "
                 "plan that recomputes nothing; `min feasible` the least budget any plan meets (micro-batching "
                 "included; its part count in brackets when it splits the batch), in MiB and as a share of the "
                 "store-all workspace. Budgets are fractions of the store-all workspace; each cell is the plan's "
                 "recompute overhead (FLOPs executed over FLOPs of running every op once, minus 1), with the "
                 "micro-batch part count when the plan splits the batch. `sqrt`: Chen et al.'s checkpoints "
                 "(\"—\": its plan does not fit the budget). `exact`: `auto` and then Checkmate's MILP by CBC with a "
                 f"{EXAMPLE_EXACT_SECONDS} s limit (✓ proven optimal; otherwise the best plan found, never worse than "
                 "auto's, and in brackets the proven lower bound on the overhead); it is not run on joint graphs of "
                 f"more than {EXACT_MAX_NODES} nodes, where CBC does not get past the root of its search in that time. "
                 "✓ after `auto`: auto proved its plan optimal itself. `auto ws/peak`: the workspace of auto's plan "
                 "over its peak of live bytes (the arena's waste; the issue's target is 1.02 at most); under `min "
                 "feasible`, the same and the overhead of the plan at that budget. `auto solve s`: memgrad's "
                 "wall-clock solve time and the CPU time of the whole `memgrad plan` process, medians of 3.\n")
    lines.append("| model | joint nodes | store-all workspace MiB | store-all peak_live MiB | min feasible MiB (%) "
                 "| budget | sqrt | auto | auto ws/peak | exact | auto solve s (wall / CPU) |")
    lines.append("|---|---|---|---|---|---|---|---|---|---|---|")
    for name in example_models():
        f = os.path.join(ROOT, "examples", name + ".mg")
        base = plan(mg, f, repeat=1)
        if base is None:
            lines.append(f"| {name} | not planned: `memgrad plan` failed | | | | | | | | |")
            continue
        all_b, minf, nodes = base["store_all_workspace_bytes"], base["min_feasible_bytes"], len(base["nodes"])
        at_min = plan(mg, f, minf, repeat=1)
        k_min = at_min.get("micro_batches", 1) if at_min else 1
        min_plan = (f"; {pct(at_min['recompute_overhead'])}, ws/peak {waste(at_min)}" if at_min else "; not planned")
        first = (f"| {name} | {nodes} | {mib(all_b)} | {mib(base['peak_live_bytes'])} | "
                 f"{mib(minf)} ({100 * minf / all_b:.1f}%{f', {k_min} parts' if k_min > 1 else ''}{min_plan}) |")
        for i, frac in enumerate([0.75, 0.5, 0.33, 0.25]):
            b = int(all_b * frac)
            lead = first if i == 0 else "| | | | | |"
            if b < minf:
                lines.append(f"{lead} {int(frac * 100)}% | infeasible | infeasible | | infeasible | |")
                continue
            a = plan(mg, f, b)
            s = plan(mg, f, b, solver="sqrt", repeat=1)
            if nodes > EXACT_MAX_NODES:
                eo = f"not run ({nodes} nodes)"
            else:
                e = plan(mg, f, b, solver="exact", repeat=1, time_limit=EXAMPLE_EXACT_SECONDS)
                if e is None:
                    eo = "failed"
                elif e["optimal"] is True:
                    eo = parts(e) + " ✓"
                else:
                    eo = parts(e) + f" (≥ {pct(max(e['flops_lower_bound'] / e['flops_once'] - 1, 0))})"
            ao = parts(a) + (" ✓" if a["optimal"] is True else "") if a else "failed"
            so_ = parts(s) if s else "—"
            t = f"{a['median_seconds']:.3f} / {a['median_cpu_seconds']:.2f}" if a else ""
            lines.append(f"{lead} {int(frac * 100)}% | {so_} | {ao} | {waste(a) if a else ''} | {eo} | {t} |")
    lines.append("")


TORCH_MODELS = ["mlp_deep", "cnn_fmnist", "transformer", "resnet18_64", "unet_small"]


def torch_checkpoint(mg, lines):
    """PyTorch's checkpointing beside memgrad on the example models bench/torch_models.py has,
    each at the same fraction of its own store-all memory (torch: activations autograd saves;
    memgrad: the whole workspace)."""
    lines.append("PyTorch eager on the same architectures (`bench/torch_models.py`), run by "
                 "`bench/torch_checkpoint.py`: `checkpoint_sequential` on the sequential models (mlp_deep, cnn_fmnist, "
                 "resnet18_64 as one `nn.Sequential` of its layers and blocks; the transformer after its embedding, "
                 "over its 6 blocks and the output head), and `torch.utils.checkpoint` on unet_small's double-conv "
                 "blocks (its skips cross them, so it is not a sequence). torch's memory is the peak of the "
                 "activations autograd saves (weights excluded), relative to no checkpointing; memgrad's is its whole "
                 "workspace relative to store-all, and the last column is `auto` at that fraction of it. torch's "
                 "FLOP overhead is counted (matmul and convolution FLOPs, forward and backward, by a dispatch mode), "
                 "its time overhead measured, in process CPU time and wall-clock time (1 thread, glibc malloc "
                 "tuned as in `bench/common.sh`, median of 5 rounds that each time every configuration once; noisy on a "
                 "shared machine); memgrad's overhead is its plan's FLOPs over running every op once.\n")
    lines.append("| model | torch configuration | torch memory | torch FLOP overhead | torch time overhead (CPU / wall) "
                 "| memgrad auto at that memory |")
    lines.append("|---|---|---|---|---|---|")
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", MG_BENCH_THREADS="1")
    if os.environ.get("MG_BENCH_MALLOC") != "default":  # as bench/common.sh: freed memory stays in the heap for reuse
        env.update(MALLOC_MMAP_THRESHOLD_="33554432", MALLOC_TRIM_THRESHOLD_="68719476736")
    have = example_models()
    notes = []
    for name in [m for m in TORCH_MODELS if m in have]:
        p = subprocess.run(["/usr/bin/python3", os.path.join(HERE, "torch_checkpoint.py"), name, "5"],
                           capture_output=True, text=True, env=env)
        if p.returncode != 0:
            notes.append(f"{name}: not run, bench/torch_checkpoint.py failed "
                         f"({' '.join(p.stderr.strip().splitlines()[-1:])}); bench/run.sh installs python3-torch")
            continue
        rows = [json.loads(l) for l in p.stdout.splitlines() if l.startswith("{")]
        base_saved = rows[0]["saved_peak_bytes"]
        f = os.path.join(ROOT, "examples", name + ".mg")
        st = plan(mg, f, repeat=1)
        all_b, minf = st["store_all_workspace_bytes"], st["min_feasible_bytes"]
        for r in rows:
            frac = r["saved_peak_bytes"] / base_saved
            b = int(all_b * frac)
            if frac > 1:
                mo = "— (above store-all)"
            elif b < minf:
                mo = f"infeasible (min {100 * minf / all_b:.1f}%)"
            else:
                a = plan(mg, f, b, repeat=1)
                mo = parts(a) if a else "failed"
            lines.append(f"| {name} | {r['config']} | {100 * frac:.1f}% | {pct(r['flop_overhead'])} | "
                         f"{pct(r['cpu_overhead'])} / {pct(r['time_overhead'])} | {mo} |")
    for name in have:
        if name not in TORCH_MODELS:
            notes.append(f"{name}: not run, bench/torch_models.py has no PyTorch version of it")
    if notes:
        lines.append("")
        lines += [f"- {n}" for n in notes]
    lines.append("")


# Sections of the results file: key, heading, function(mg, lines, tmp, args).
SECTIONS = [
    ("checkmate", "Checkmate training graphs", lambda mg, l, tmp, a: checkmate(mg, l, a.reuse_exact)),
    ("layered", "Layered DAGs (Moccasin's scaling set)", lambda mg, l, tmp, a: layered(mg, l)),
    ("minimalloc", "MiniMalloc's allocation instances", lambda mg, l, tmp, a: minimalloc(mg, l)),
    ("growth", "Solve time against joint-graph size (auto, 50% of store-all)", lambda mg, l, tmp, a: growth(mg, l, tmp)),
    ("examples", "Example models", lambda mg, l, tmp, a: examples(mg, l)),
    ("torch", "Beside PyTorch's checkpointing", lambda mg, l, tmp, a: torch_checkpoint(mg, l)),
]
# headings earlier versions of this script wrote, so their sections are recognised and replaced
OLD_HEADINGS = {"Beside PyTorch checkpoint_sequential": "torch"}


def section_key(heading):
    for key, title, _ in SECTIONS:
        if heading.startswith(title.split(" (")[0]):
            return key
    for old, key in OLD_HEADINGS.items():
        if heading.startswith(old):
            return key
    return None


def read_sections(path):
    """The sections of an earlier results file: [(key or None, text)], the header dropped."""
    if not path or not os.path.exists(path):
        return []
    out, cur = [], None
    for line in open(path).read().splitlines():
        if line.startswith("## "):
            cur = [section_key(line[3:].strip()), [line]]
            out.append(cur)
        elif cur is not None:
            cur[1].append(line)
    return [(k, "\n".join(t).rstrip() + "\n") for k, t in out]


def git(src, *args):
    p = subprocess.run(["git", "-C", src] + list(args), capture_output=True, text=True)
    return p.stdout.strip() if p.returncode == 0 else None


def measured_commit(mg):
    """Which source the memgrad binary was built from: the CMake source directory of its build
    tree (or this checkout), its commit and branch, whether the planner's sources differ from
    the commit, and whether they are main's."""
    src = ROOT
    d = os.path.dirname(os.path.abspath(mg))
    while d != os.path.dirname(d):
        cache = os.path.join(d, "CMakeCache.txt")
        if os.path.exists(cache):
            for line in open(cache):
                if line.startswith("CMAKE_HOME_DIRECTORY:"):
                    src = line.split("=", 1)[1].strip()
            break
        d = os.path.dirname(d)
    head, branch = git(src, "rev-parse", "--short", "HEAD"), git(src, "rev-parse", "--abbrev-ref", "HEAD")
    if not head:
        return f"memgrad from {src} (not a git checkout)"
    text = f"memgrad built from commit {head} ({branch})"
    code = ["compiler", "ir", "runtime", "CMakeLists.txt"]
    if git(src, "status", "--porcelain", "--untracked-files=no", "--", *code):
        text += " with uncommitted changes to compiler/ir/runtime"
    elif branch != "main":
        main = git(src, "rev-parse", "--short", "main")
        same = subprocess.run(["git", "-C", src, "diff", "--quiet", "main", "HEAD", "--"] + code).returncode == 0
        if main and same:
            text += f", whose compiler/ir/runtime are main's {main}"
    return text


def load():
    la = os.getloadavg()
    return f"{la[0]:.1f} / {la[1]:.1f} / {la[2]:.1f}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--memgrad", default=os.path.join(ROOT, "build-release/memgrad"))
    ap.add_argument("--out", default=None, help="results file: the sections measured replace theirs, the others stay")
    ap.add_argument("--sections", default=",".join(k for k, _, _ in SECTIONS))
    ap.add_argument("--reuse-exact", default=None, help="earlier results file to take the MILP's Checkmate columns from")
    a = ap.parse_args()
    keys = [k for k, _, _ in SECTIONS]
    sections = a.sections.split(",")
    for s in sections:
        if s not in keys:
            sys.exit(f"planner.py: unknown section '{s}'; sections are {', '.join(keys)}")
    if not os.path.exists(a.memgrad):
        sys.exit(f"{a.memgrad} not found: build it first (cmake -S . -B build-release -DCMAKE_BUILD_TYPE=Release "
                 "&& cmake --build build-release)")
    commit = measured_commit(a.memgrad)
    old = read_sections(a.out)
    new = {}
    with tempfile.TemporaryDirectory() as tmp:
        for key, title, fn in SECTIONS:
            if key not in sections:
                continue
            t0, l0 = datetime.datetime.utcnow(), load()
            body = []
            fn(a.memgrad, body, tmp, a)
            t1 = datetime.datetime.utcnow()
            meta = (f"Measured: {t0:%Y-%m-%d %H:%M}–{t1:%H:%M} UTC, {commit}; load average {l0} at the start, "
                    f"{load()} at the end (1 / 5 / 15 min, {os.cpu_count()} cores).")
            new[key] = "\n".join([f"## {title}\n", meta + "\n"] + body).rstrip() + "\n"
            print(new[key], flush=True)
            write(a.out, keys, old, new)  # after each section, so a later failure keeps what is measured


def write(path, keys, old, new):
    """Writes the results file: the sections measured now, the others of the earlier file as they were."""
    if not path:
        return
    # the sections in SECTIONS' order, each measured now or kept from the earlier file; then any other
    # sections of the earlier file as they were
    kept = {k: t for k, t in old if k is not None}
    out = [new.get(k) or kept.get(k) for k in keys]
    out = [t for t in out if t] + [t for k, t in old if k is None]
    header = ["# Planner benchmark\n",
              "Written by `python3 bench/planner.py --out bench/results/planner.md [--sections ...]`, which "
              "re-measures the sections asked for and keeps the others as they were. The machine's cores are shared "
              "with other jobs, so wall-clock times are under the load stated in each section; CPU times depend on "
              "it less. When and on what each section was measured:\n"]
    for t in out:
        title = t.splitlines()[0][3:].strip()
        m = [l for l in t.splitlines() if l.startswith("Measured: ")]
        header.append(f"- {title}: " + (m[0][len("Measured: "):] if m else "not recorded"))
    text = "\n".join(header) + "\n\n" + "\n".join(out)
    with open(path, "w") as fh:
        fh.write(text)


if __name__ == "__main__":
    main()
