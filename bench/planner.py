#!/usr/bin/env python3
"""bench/planner.py — the planner's figures (issue 3), measured with the built memgrad binary.

  python3 bench/planner.py [--memgrad build-release/memgrad] [--out bench/results/planner.md]
                           [--sections checkmate,layered,growth,examples,torch] [--reuse-exact FILE]

--reuse-exact FILE takes the MILP's columns (exact/once, bound/once, exact solve s) of the
Checkmate table from an earlier results file instead of running the MILP again (it is most of
the half hour); a point whose budget label differs there is solved afresh.

Sections: Checkmate training graphs at 90..40% of the store-all peak and at the minimum
feasible budget (auto vs sqrt vs exact, the MILP, and the best lower bound it proves); Moccasin's layered DAGs at
0.8x and 0.9x of the no-recompute peak; auto's solve time against joint-graph size; the example
models at 75/50/33/25%. Every plan is checked by memgrad's verifier (--verify). Solve times are
medians of 3 runs with the plan cache off.
"""
import argparse, json, os, resource, statistics, subprocess, sys, tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def run(mg, args):
    p = subprocess.run([mg] + args + ["--no-cache"], capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr


def plan(mg, target, budget=None, solver="auto", graph=False, repeat=3, time_limit=None):
    args = ["plan"] + (["--graph", target] if graph else [target]) + ["--format", "json", "--verify", "--solver", solver]
    if time_limit is not None:
        args += ["--time-limit", str(time_limit)]
    if budget is not None:
        args += ["--budget", f"{budget}B"]
    times, cpus, out = [], [], None
    for _ in range(repeat):
        r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        rc, so, se = run(mg, args)
        r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime)
        if rc != 0:
            return None
        if "plan verified" not in se:
            sys.exit(f"plan of {target} not verified: {se}")
        out = json.loads(so)
        times.append(out["solve_seconds"])
    out["median_seconds"] = statistics.median(times)
    out["median_cpu_seconds"] = statistics.median(cpus)  # the whole process (load, plan, verify, write)
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
    lines.append("## Checkmate training graphs\n")
    lines.append("Budgets are fractions of the store-all workspace. `auto/once` is the cost `auto` executes over "
                 "the cost of running every op once. `exact` is Checkmate's MILP solved by CBC with a "
                 f"{EXACT_SECONDS} s limit, started from auto's plan: `exact/once` is its plan's cost (✓ when proven "
                 "optimal) and `bound/once` the best proven lower bound: the MILP's, or the one memgrad proves "
                 "itself (`flops_lower_bound`: values that cannot stay resident across some step are recomputed), "
                 "whichever is larger (at least 1: every op runs once). "
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
    lines.append("## Layered DAGs (Moccasin's scaling set)\n")
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


def growth(mg, lines, tmp):
    lines.append("## Solve time against joint-graph size (auto, 50% of store-all)\n")
    lines.append("| layers | joint nodes | solve s |")
    lines.append("|---|---|---|")
    rows = []
    for layers in [16, 160, 1600]:
        f = os.path.join(tmp, f"chain{layers}.mg")
        with open(f, "w") as fh:
            fh.write(f"model chain\ninput x: f32[32, 64]\nh = x\nrepeat {layers} {{\n param w: f32[64, 64] = xavier\n"
                     " h = tanh(h @ w)\n}\nloss = mean(h * h)\nminimize loss\n")
        base = plan(mg, f, repeat=1)
        a = plan(mg, f, base["store_all_workspace_bytes"] // 2)
        rows.append((layers, len(a["nodes"]), a["median_seconds"]))
        lines.append(f"| {layers} | {len(a['nodes'])} | {a['median_seconds']:.3f} |")
    import math
    if len(rows) >= 2 and rows[0][2] > 0:
        k = math.log(rows[-1][2] / rows[-2][2]) / math.log(rows[-1][1] / rows[-2][1])
        lines.append(f"\nGrowth between the last two sizes: time ~ nodes^{k:.2f}.\n")


def examples(mg, lines):
    lines.append("## Example models\n")
    lines.append(f"`exact`: the MILP with a {EXACT_SECONDS} s limit (✓ proven optimal; otherwise the best plan found, "
                 "never worse than auto's).\n")
    lines.append("| model | store-all | min feasible | budget | sqrt overhead | auto overhead | exact overhead |")
    lines.append("|---|---|---|---|---|---|---|")
    for name in ["mlp.mg", "mlp_deep.mg"]:
        f = os.path.join(ROOT, "examples", name)
        base = plan(mg, f, repeat=1)
        all_b = base["store_all_workspace_bytes"]
        base_min = plan(mg, f, all_b, repeat=1)
        rc, so, _ = run(mg, ["plan", f, "--format", "json"])
        minf = json.loads(so)["min_feasible_bytes"]
        for frac in [0.75, 0.5, 0.33, 0.25]:
            b = int(all_b * frac)
            a = plan(mg, f, b, repeat=1) if b >= minf else None
            s = plan(mg, f, b, solver="sqrt", repeat=1)
            e = plan(mg, f, b, solver="exact", repeat=1, time_limit=EXACT_SECONDS) if b >= minf else None
            ao = pct(a["recompute_overhead"]) if a else "infeasible"
            so_ = pct(s["recompute_overhead"]) if s else "—"
            eo = (pct(e["recompute_overhead"]) + (" ✓" if e["optimal"] is True else "")) if e else "infeasible"
            lines.append(f"| {name} | {all_b} | {minf} | {int(frac * 100)}% | {so_} | {ao} | {eo} |")
    lines.append("")


def torch_checkpoint(mg, lines):
    """checkpoint_sequential beside memgrad on mlp_deep, each at the same fraction of its own
    store-all memory (torch: activations autograd saves; memgrad: the whole workspace)."""
    lines.append("## Beside PyTorch checkpoint_sequential (mlp_deep)\n")
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", MG_BENCH_THREADS="1")
    p = subprocess.run(["/usr/bin/python3", os.path.join(HERE, "torch_checkpoint.py"), "5"], capture_output=True,
                       text=True, env=env)
    if p.returncode != 0:
        lines.append(f"not run: bench/torch_checkpoint.py failed ({p.stderr.strip().splitlines()[-1:]}); "
                     "bench/run.sh installs python3-torch\n")
        return
    rows = [json.loads(l) for l in p.stdout.splitlines() if l.startswith("{")]
    base = rows[0]["saved_peak_bytes"]
    f = os.path.join(ROOT, "examples", "mlp_deep.mg")
    all_b = plan(mg, f, repeat=1)["store_all_workspace_bytes"]
    # checkpoint_sequential recomputes the forward pass of every segment but the last; the
    # backward pass costs about twice the forward, so a step is about 3 forward passes
    lines.append("torch's memory is the activations autograd saves (weights excluded), relative to no "
                 "checkpointing; memgrad's is its whole workspace relative to store-all. torch's FLOP overhead "
                 "is (k-1)/k of a forward pass over 3 forward passes; its time overhead is measured (1 thread, "
                 "median of 5 steps, noisy on a shared machine). memgrad's overhead is its plan's FLOPs.\n")
    lines.append("| segments k | torch memory | torch FLOP overhead | torch time overhead | memgrad auto at that memory |")
    lines.append("|---|---|---|---|---|")
    for r in rows:
        k, frac = r["segments"], r["saved_peak_bytes"] / base
        flops = (k - 1) / k / 3 if k else 0.0
        a = plan(mg, f, int(all_b * frac), repeat=1) if frac <= 1 else None
        mo = pct(a["recompute_overhead"]) if a else ("—" if frac > 1 else "infeasible")
        lines.append(f"| {k or 'none'} | {100 * frac:.1f}% | {pct(flops)} | {pct(r['time_overhead'])} | {mo} |")
    lines.append("")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--memgrad", default=os.path.join(ROOT, "build-release/memgrad"))
    ap.add_argument("--out", default=None)
    ap.add_argument("--sections", default="checkmate,layered,growth,examples,torch")
    ap.add_argument("--reuse-exact", default=None, help="earlier results file to take the MILP's Checkmate columns from")
    a = ap.parse_args()
    sections = set(a.sections.split(","))
    if not os.path.exists(a.memgrad):
        sys.exit(f"{a.memgrad} not found: build it first (cmake -S . -B build-release -DCMAKE_BUILD_TYPE=Release "
                 "&& cmake --build build-release)")
    import datetime
    la = os.getloadavg()
    lines = ["# Planner benchmark\n",
             f"Measured {datetime.datetime.utcnow():%Y-%m-%d %H:%M} UTC on {os.cpu_count()} cores shared with other jobs: "
             f"load average {la[0]:.1f} / {la[1]:.1f} / {la[2]:.1f} (1 / 5 / 15 min) at the start, so solve times are "
             "wall-clock times under that load.\n"]
    with tempfile.TemporaryDirectory() as tmp:
        if "checkmate" in sections: checkmate(a.memgrad, lines, a.reuse_exact)
        if "layered" in sections: layered(a.memgrad, lines)
        if "growth" in sections: growth(a.memgrad, lines, tmp)
        if "examples" in sections: examples(a.memgrad, lines)
        if "torch" in sections: torch_checkpoint(a.memgrad, lines)
    la = os.getloadavg()
    lines.append(f"Load average at the end: {la[0]:.1f} / {la[1]:.1f} / {la[2]:.1f}.\n")
    text = "\n".join(lines) + "\n"
    print(text)
    if a.out:
        with open(a.out, "w") as fh:
            fh.write(text)


if __name__ == "__main__":
    main()
