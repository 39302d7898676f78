// Tokio peer of bench/coro/yield_bench.cc: many coroutines yielding, on Tokio's multi-thread
// runtime, printed as Google Benchmark JSON so the rows merge with yield_bench's.
//
//   yield/coroutines:C/steps:S/workers:W/tokio
//       The main thread (not a runtime worker) spawns C tasks with rt.spawn on a runtime
//       built with new_multi_thread().worker_threads(W) (no I/O or timer driver); each task
//       runs S steps with tokio::task::yield_now().await between two steps (S - 1 yields),
//       so C * S steps in all; the main thread waits until every task finished.
//       items_per_second = steps/s. Shapes: 100,000 x 100 and 10,000 x 1,000, W in {1, 2}.
//   Completion: the JoinHandle is dropped right away (the task is detached, like Detach() in
//       yield_bench) and each task counts down a latch built like bench/sched/completion.h:
//       16 cache-line padded lanes (task i uses lane i % 16), only the last task of a lane
//       touches the shared lane count, only the last lane unparks the main thread. Awaiting
//       C JoinHandles instead would need the main thread inside block_on and a join waker
//       registered and woken per task, so the latch is the cheapest fair choice.
//   One runtime per shape, reused across repetitions and iterations. Each repetition runs
//   one untimed warm-up iteration (as Google Benchmark discards its trial batches), then
//   timed iterations until --min_time seconds (default 0.5) of wall time have elapsed.
//   real_time = wall time per iteration; cpu_time = process CPU time (all threads,
//   CLOCK_PROCESS_CPUTIME_ID) per iteration, which is NOT what Google Benchmark's cpu_time
//   in yield_bench is (there: the benchmark thread's own CPU time).
//
// Flags: --filter=SUBSTRING (plain substring of the name, not a regex), --repetitions=N,
//        --out=PATH (JSON there instead of stdout), --min_time=SECONDS. Progress on stderr.
use std::fmt::Write as _;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::thread::{self, Thread};
use std::time::{Duration, Instant};

// ---------------------------------------------------------------- completion latch

const LANES: usize = 16;

#[repr(align(128))]
struct Padded<T>(T);

struct Latch {
    lanes: [Padded<AtomicU32>; LANES],
    lanes_left: Padded<AtomicU32>,
    done: Padded<AtomicBool>,
    waiter: Thread,
}

impl Latch {
    fn new(waiter: Thread) -> Latch {
        const ZERO: Padded<AtomicU32> = Padded(AtomicU32::new(0));
        Latch {
            lanes: [ZERO; LANES],
            lanes_left: Padded(AtomicU32::new(0)),
            done: Padded(AtomicBool::new(true)),
            waiter,
        }
    }

    // Arms the latch for jobs 0..jobs-1. Not concurrent with arrive or wait.
    fn reset(&self, jobs: u32) {
        let lanes = LANES as u32;
        let mut used = 0;
        for (lane, slot) in self.lanes.iter().enumerate() {
            let count = jobs / lanes + u32::from((lane as u32) < jobs % lanes);
            slot.0.store(count, Ordering::Relaxed);
            used += u32::from(count > 0);
        }
        self.lanes_left.0.store(used, Ordering::Relaxed);
        // Release: published to the workers by the spawn that follows anyway.
        self.done.0.store(used == 0, Ordering::Release);
    }

    // Job `index` finished; any thread, once per job.
    fn arrive(&self, index: u32) {
        if self.lanes[index as usize % LANES].0.fetch_sub(1, Ordering::AcqRel) != 1 {
            return;
        }
        if self.lanes_left.0.fetch_sub(1, Ordering::AcqRel) != 1 {
            return;
        }
        self.done.0.store(true, Ordering::Release);
        // A late unpark can only make the next wait's first park return early; the loop in
        // wait re-checks the flag.
        self.waiter.unpark();
    }

    // Blocks the waiter thread (the one given to new) until every job arrived.
    fn wait(&self) {
        while !self.done.0.load(Ordering::Acquire) {
            thread::park();
        }
    }
}

// ---------------------------------------------------------------- the benchmark

async fn yielder(steps: u32, done: &'static Latch, index: u32) {
    for _ in 1..steps {
        tokio::task::yield_now().await;
    }
    done.arrive(index);
}

#[derive(Clone, Copy)]
struct Shape {
    coroutines: u32,
    steps: u32,
    workers: usize,
}

impl Shape {
    fn name(&self) -> String {
        format!(
            "yield/coroutines:{}/steps:{}/workers:{}/tokio",
            self.coroutines, self.steps, self.workers
        )
    }
}

fn shapes() -> Vec<Shape> {
    let mut all = Vec::new();
    for workers in [1, 2] {
        all.push(Shape { coroutines: 100_000, steps: 100, workers });
        all.push(Shape { coroutines: 10_000, steps: 1_000, workers });
    }
    all
}

fn run_iteration(rt: &tokio::runtime::Runtime, shape: Shape, done: &'static Latch) {
    done.reset(shape.coroutines);
    for i in 0..shape.coroutines {
        // Dropping the JoinHandle detaches the task.
        drop(rt.spawn(yielder(shape.steps, done, i)));
    }
    done.wait();
}

fn process_cpu_seconds() -> f64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: ts is a valid, writable timespec.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts) };
    if rc != 0 {
        return 0.0;
    }
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

struct Entry {
    name: String,
    instance_index: usize,
    repetitions: u32,
    repetition_index: u32,
    iterations: u64,
    real_ms: f64,
    cpu_ms: f64,
    items_per_second: f64,
}

fn measure(
    rt: &tokio::runtime::Runtime,
    shape: Shape,
    done: &'static Latch,
    min_time: Duration,
) -> (u64, f64, f64, f64) {
    run_iteration(rt, shape, done); // warm-up, not counted
    let cpu_start = process_cpu_seconds();
    let start = Instant::now();
    let mut iterations = 0u64;
    loop {
        run_iteration(rt, shape, done);
        iterations += 1;
        if start.elapsed() >= min_time {
            break;
        }
    }
    let wall = start.elapsed().as_secs_f64();
    let cpu = process_cpu_seconds() - cpu_start;
    let items = iterations as f64 * shape.coroutines as f64 * shape.steps as f64;
    (
        iterations,
        wall * 1e3 / iterations as f64,
        cpu * 1e3 / iterations as f64,
        items / wall,
    )
}

// ---------------------------------------------------------------- JSON output

fn json_string(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn json_number(x: f64) -> String {
    if x.is_finite() {
        format!("{:e}", x)
    } else {
        "0".to_string()
    }
}

fn local_date() -> String {
    // SAFETY: time/localtime_r/strftime with valid pointers and a sized buffer.
    unsafe {
        let now = libc::time(std::ptr::null_mut());
        let mut tm: libc::tm = std::mem::zeroed();
        if libc::localtime_r(&now, &mut tm).is_null() {
            return String::new();
        }
        let mut buf = [0u8; 64];
        let n = libc::strftime(
            buf.as_mut_ptr() as *mut libc::c_char,
            buf.len(),
            b"%Y-%m-%dT%H:%M:%S%z\0".as_ptr() as *const libc::c_char,
            &tm,
        );
        let mut s = String::from_utf8_lossy(&buf[..n]).into_owned();
        // +0000 -> +00:00, as Google Benchmark writes it.
        if s.len() >= 5 {
            s.insert(s.len() - 2, ':');
        }
        s
    }
}

fn host_name() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: buf is writable for buf.len() bytes.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr() as *mut libc::c_char, buf.len()) };
    if rc != 0 {
        return String::new();
    }
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).into_owned()
}

fn num_cpus() -> i64 {
    // SAFETY: plain sysconf query.
    unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) as i64 }
}

fn mhz_per_cpu() -> i64 {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    for line in cpuinfo.lines() {
        if line.starts_with("cpu MHz") {
            if let Some(v) = line.split(':').nth(1) {
                if let Ok(mhz) = v.trim().parse::<f64>() {
                    return mhz.round() as i64;
                }
            }
        }
    }
    0
}

fn load_avg() -> Vec<f64> {
    let text = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    text.split_whitespace()
        .take(3)
        .filter_map(|v| v.parse::<f64>().ok())
        .collect()
}

fn render(entries: &[Entry]) -> String {
    let exe = std::env::args().next().unwrap_or_default();
    let loads: Vec<String> = load_avg().iter().map(|v| format!("{}", v)).collect();
    let mut out = String::new();
    out.push_str("{\n  \"context\": {\n");
    let _ = writeln!(out, "    \"date\": {},", json_string(&local_date()));
    let _ = writeln!(out, "    \"host_name\": {},", json_string(&host_name()));
    let _ = writeln!(out, "    \"executable\": {},", json_string(&exe));
    let _ = writeln!(out, "    \"num_cpus\": {},", num_cpus());
    let _ = writeln!(out, "    \"mhz_per_cpu\": {},", mhz_per_cpu());
    let _ = writeln!(out, "    \"load_avg\": [{}],", loads.join(","));
    let _ = writeln!(out, "    \"library_build_type\": \"release\",");
    let _ = writeln!(
        out,
        "    \"library\": {},",
        json_string(&format!("tokio {}", env!("TOKIO_YIELD_TOKIO_VERSION")))
    );
    let _ = writeln!(out, "    \"compiler\": {}", json_string(env!("TOKIO_YIELD_RUSTC_VERSION")));
    out.push_str("  },\n  \"benchmarks\": [");
    for (i, e) in entries.iter().enumerate() {
        out.push_str(if i == 0 { "\n" } else { ",\n" });
        out.push_str("    {\n");
        let _ = writeln!(out, "      \"name\": {},", json_string(&e.name));
        // One family (like one BENCHMARK registration); a shape is one instance of it.
        let _ = writeln!(out, "      \"family_index\": 0,");
        let _ = writeln!(out, "      \"per_family_instance_index\": {},", e.instance_index);
        let _ = writeln!(out, "      \"run_name\": {},", json_string(&e.name));
        let _ = writeln!(out, "      \"run_type\": \"iteration\",");
        let _ = writeln!(out, "      \"repetitions\": {},", e.repetitions);
        let _ = writeln!(out, "      \"repetition_index\": {},", e.repetition_index);
        let _ = writeln!(out, "      \"threads\": 1,");
        let _ = writeln!(out, "      \"iterations\": {},", e.iterations);
        let _ = writeln!(out, "      \"real_time\": {},", json_number(e.real_ms));
        let _ = writeln!(out, "      \"cpu_time\": {},", json_number(e.cpu_ms));
        let _ = writeln!(out, "      \"time_unit\": \"ms\",");
        let _ = writeln!(out, "      \"items_per_second\": {}", json_number(e.items_per_second));
        out.push_str("    }");
    }
    out.push_str("\n  ]\n}\n");
    out
}

// ---------------------------------------------------------------- main

const USAGE: &str = "usage: tokio_yield [--filter=SUBSTRING] [--repetitions=N] [--out=PATH] \
                     [--min_time=SECONDS]";

fn main() {
    let mut filter = String::new();
    let mut repetitions: u32 = 1;
    let mut out_path: Option<String> = None;
    let mut min_time = 0.5f64;
    for arg in std::env::args().skip(1) {
        let parsed = if let Some(v) = arg.strip_prefix("--filter=") {
            filter = v.to_string();
            true
        } else if let Some(v) = arg.strip_prefix("--repetitions=") {
            v.parse().map(|n: u32| repetitions = n.max(1)).is_ok()
        } else if let Some(v) = arg.strip_prefix("--out=") {
            out_path = Some(v.to_string());
            true
        } else if let Some(v) = arg.strip_prefix("--min_time=") {
            v.trim_end_matches('s').parse().map(|t: f64| min_time = t).is_ok() && min_time >= 0.0
        } else if arg == "-h" || arg == "--help" {
            println!("{}", USAGE);
            return;
        } else {
            false
        };
        if !parsed {
            eprintln!("tokio_yield: bad argument {:?}\n{}", arg, USAGE);
            std::process::exit(2);
        }
    }
    let min_time = Duration::from_secs_f64(min_time);

    let done: &'static Latch = Box::leak(Box::new(Latch::new(thread::current())));
    let mut entries = Vec::new();
    for (instance_index, shape) in shapes().into_iter().enumerate() {
        let name = shape.name();
        if !name.contains(&filter) {
            continue;
        }
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(shape.workers)
            .build()
            .expect("building the Tokio runtime");
        for repetition_index in 0..repetitions {
            let (iterations, real_ms, cpu_ms, items_per_second) =
                measure(&rt, shape, done, min_time);
            eprintln!(
                "{:<50} {:>5} it {:>10.3} ms real {:>10.3} ms cpu {:>8.3} M items/s",
                name,
                iterations,
                real_ms,
                cpu_ms,
                items_per_second / 1e6
            );
            entries.push(Entry {
                name: name.clone(),
                instance_index,
                repetitions,
                repetition_index,
                iterations,
                real_ms,
                cpu_ms,
                items_per_second,
            });
        }
        drop(rt);
    }

    let json = render(&entries);
    match out_path {
        Some(path) => {
            if let Err(err) = std::fs::write(&path, json) {
                eprintln!("tokio_yield: cannot write {}: {}", path, err);
                std::process::exit(1);
            }
        }
        None => print!("{}", json),
    }
}
