// CPU time per process kind and thread, from /proc (Linux): the benchmark's children (headless
// Chromium's processes, nginx) are walked from this process down, and each thread's time on a
// CPU is read from /proc/PID/task/TID/schedstat (nanoseconds, not 10 ms ticks). The viewer
// bench takes a snapshot before and after a scrub and reports the difference per timestep.
//
//   const a = cpuSnapshot(); ...; const rows = cpuDelta(a, cpuSnapshot()); // [{kind, thread, ms}]

import { readdirSync, readFileSync } from "node:fs";

const read = (p) => {
  try {
    return readFileSync(p, "utf8");
  } catch {
    return null; // the process or thread ended meanwhile
  }
};

/** pid -> parent pid of every process on the machine. */
function parents() {
  const out = new Map();
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    const stat = read(`/proc/${name}/stat`);
    if (!stat) continue;
    const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
    out.set(Number(name), ppid);
  }
  return out;
}

/** What a process is: Chromium's --type (the network service by its sub-type), or its command. */
function kindOf(pid) {
  // Chromium rewrites its command line as one space-separated title (setproctitle).
  const cmd = (read(`/proc/${pid}/cmdline`) ?? "").split(/[\0 ]/);
  const type = cmd.find((a) => a.startsWith("--type="))?.slice(7);
  if (type === "utility") {
    const sub = cmd.find((a) => a.startsWith("--utility-sub-type="))?.slice(19) ?? "";
    return sub.includes("Network") ? "network service" : `utility ${sub}`;
  }
  if (type) return type === "gpu-process" ? "GPU process" : type;
  const exe = cmd[0]?.split("/").pop() ?? "?";
  if (exe.includes("chrom")) return "browser";
  if (exe.includes("nginx")) return "nginx";
  return exe;
}

/**
 * {"kind\tthread" -> ns on CPU} for every thread of every descendant of `root` (default this
 * process, which is not itself counted). Threads of one name in a process kind are summed.
 */
export function cpuSnapshot(root = process.pid) {
  const par = parents();
  const mine = new Set([root]);
  let grew = true;
  while (grew) {
    grew = false;
    for (const [pid, ppid] of par) {
      if (!mine.has(pid) && mine.has(ppid)) {
        mine.add(pid);
        grew = true;
      }
    }
  }
  mine.delete(root);
  const out = new Map();
  for (const pid of mine) {
    const kind = kindOf(pid);
    let tids = [];
    try {
      tids = readdirSync(`/proc/${pid}/task`);
    } catch {
      continue;
    }
    for (const tid of tids) {
      const comm = (read(`/proc/${pid}/task/${tid}/comm`) ?? "?").trim().replace(/\d+$/, "");
      const ns = Number((read(`/proc/${pid}/task/${tid}/schedstat`) ?? "0").split(" ")[0]);
      const key = `${kind}\t${comm}`;
      out.set(key, (out.get(key) ?? 0) + ns);
    }
  }
  return out;
}

/** Rows {kind, thread, ms} of CPU time between two snapshots, largest first. */
export function cpuDelta(before, after) {
  const rows = [];
  for (const [key, ns] of after) {
    const ms = (ns - (before.get(key) ?? 0)) / 1e6;
    if (ms <= 0) continue;
    const [kind, thread] = key.split("\t");
    rows.push({ kind, thread, ms });
  }
  return rows.sort((a, b) => b.ms - a.ms);
}

/** The same rows summed per process kind: {kind -> ms}. */
export function byKind(rows) {
  const out = {};
  for (const r of rows) out[r.kind] = (out[r.kind] ?? 0) + r.ms;
  return out;
}
