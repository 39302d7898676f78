// Go peer of bench/coro/yield_bench.cc: many goroutines yielding, printed as Google
// Benchmark JSON so the rows merge with yield_bench's.
//
//	yield/coroutines:C/steps:S/workers:W/go
//	    runtime.GOMAXPROCS(W); the main goroutine starts C goroutines, each runs S steps
//	    with runtime.Gosched() between two steps (S - 1 yields), so C * S steps in all,
//	    then calls Done on a sync.WaitGroup; the main goroutine Waits for all C.
//	    items_per_second = steps/s. Shapes: 100,000 x 100 and 10,000 x 1,000, W in {1, 2}.
//
// Each repetition runs one untimed warm-up iteration (as Google Benchmark discards its
// trial batches), then timed iterations until --min_time seconds (default 0.5) of wall time
// have elapsed. real_time = wall time per iteration; cpu_time = process CPU time (all
// threads, getrusage(RUSAGE_SELF), GC included) per iteration, which is NOT what Google
// Benchmark's cpu_time in yield_bench is (there: the benchmark thread's own CPU time).
// Unlike the C++ benchmark thread, the main goroutine needs one of the W Ps while it
// spawns, and Go 1.19's Gosched puts the goroutine on the global run queue under
// sched.lock (what a Go program gets from Gosched).
//
// Flags: --filter=SUBSTRING (plain substring of the name, not a regex), --repetitions=N,
// --out=PATH (JSON there instead of stdout), --min_time=SECONDS. Progress on stderr.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

type shape struct {
	coroutines, steps, workers int
}

func (s shape) name() string {
	return fmt.Sprintf("yield/coroutines:%d/steps:%d/workers:%d/go", s.coroutines, s.steps, s.workers)
}

func shapes() []shape {
	var all []shape
	for _, workers := range []int{1, 2} {
		all = append(all, shape{100000, 100, workers}, shape{10000, 1000, workers})
	}
	return all
}

func yielder(steps int, done *sync.WaitGroup) {
	for step := 1; step < steps; step++ {
		runtime.Gosched()
	}
	done.Done()
}

func runIteration(s shape, done *sync.WaitGroup) {
	done.Add(s.coroutines)
	for i := 0; i < s.coroutines; i++ {
		go yielder(s.steps, done)
	}
	done.Wait()
}

func processCPUSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return float64(ru.Utime.Sec+ru.Stime.Sec) + float64(ru.Utime.Usec+ru.Stime.Usec)*1e-6
}

type entry struct {
	Name                   string  `json:"name"`
	FamilyIndex            int     `json:"family_index"`
	PerFamilyInstanceIndex int     `json:"per_family_instance_index"`
	RunName                string  `json:"run_name"`
	RunType                string  `json:"run_type"`
	Repetitions            int     `json:"repetitions"`
	RepetitionIndex        int     `json:"repetition_index"`
	Threads                int     `json:"threads"`
	Iterations             int64   `json:"iterations"`
	RealTime               float64 `json:"real_time"`
	CPUTime                float64 `json:"cpu_time"`
	TimeUnit               string  `json:"time_unit"`
	ItemsPerSecond         float64 `json:"items_per_second"`
}

type benchContext struct {
	Date             string    `json:"date"`
	HostName         string    `json:"host_name"`
	Executable       string    `json:"executable"`
	NumCPUs          int       `json:"num_cpus"`
	MHzPerCPU        int       `json:"mhz_per_cpu"`
	LoadAvg          []float64 `json:"load_avg"`
	LibraryBuildType string    `json:"library_build_type"`
	Library          string    `json:"library"`
	Compiler         string    `json:"compiler"`
}

type report struct {
	Context    benchContext `json:"context"`
	Benchmarks []entry      `json:"benchmarks"`
}

func measure(s shape, done *sync.WaitGroup, minTime time.Duration) (iterations int64, realMs, cpuMs, itemsPerSecond float64) {
	runIteration(s, done) // warm-up, not counted
	cpuStart := processCPUSeconds()
	start := time.Now()
	for {
		runIteration(s, done)
		iterations++
		if time.Since(start) >= minTime {
			break
		}
	}
	wall := time.Since(start).Seconds()
	cpu := processCPUSeconds() - cpuStart
	items := float64(iterations) * float64(s.coroutines) * float64(s.steps)
	return iterations, wall * 1e3 / float64(iterations), cpu * 1e3 / float64(iterations), items / wall
}

func loadAvg() []float64 {
	loads := []float64{}
	text, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return loads
	}
	for i, field := range strings.Fields(string(text)) {
		if i == 3 {
			break
		}
		if v, err := strconv.ParseFloat(field, 64); err == nil {
			loads = append(loads, v)
		}
	}
	return loads
}

func mhzPerCPU() int {
	text, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(text), "\n") {
		if strings.HasPrefix(line, "cpu MHz") {
			if i := strings.IndexByte(line, ':'); i >= 0 {
				if v, err := strconv.ParseFloat(strings.TrimSpace(line[i+1:]), 64); err == nil {
					return int(v + 0.5)
				}
			}
		}
	}
	return 0
}

const usage = "usage: go_yield [--filter=SUBSTRING] [--repetitions=N] [--out=PATH] [--min_time=SECONDS]"

func main() {
	filter := ""
	repetitions := 1
	outPath := ""
	minTime := 0.5
	for _, arg := range os.Args[1:] {
		ok := true
		switch {
		case strings.HasPrefix(arg, "--filter="):
			filter = strings.TrimPrefix(arg, "--filter=")
		case strings.HasPrefix(arg, "--repetitions="):
			n, err := strconv.Atoi(strings.TrimPrefix(arg, "--repetitions="))
			ok = err == nil
			if n < 1 {
				n = 1
			}
			repetitions = n
		case strings.HasPrefix(arg, "--out="):
			outPath = strings.TrimPrefix(arg, "--out=")
		case strings.HasPrefix(arg, "--min_time="):
			t, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimPrefix(arg, "--min_time="), "s"), 64)
			ok = err == nil && t >= 0
			minTime = t
		case arg == "-h" || arg == "--help":
			fmt.Println(usage)
			return
		default:
			ok = false
		}
		if !ok {
			fmt.Fprintf(os.Stderr, "go_yield: bad argument %q\n%s\n", arg, usage)
			os.Exit(2)
		}
	}

	var done sync.WaitGroup
	benchmarks := []entry{}
	for index, s := range shapes() {
		name := s.name()
		if !strings.Contains(name, filter) {
			continue
		}
		runtime.GOMAXPROCS(s.workers)
		for rep := 0; rep < repetitions; rep++ {
			iterations, realMs, cpuMs, ips := measure(s, &done, time.Duration(minTime*float64(time.Second)))
			fmt.Fprintf(os.Stderr, "%-50s %5d it %10.3f ms real %10.3f ms cpu %8.3f M items/s\n",
				name, iterations, realMs, cpuMs, ips/1e6)
			benchmarks = append(benchmarks, entry{
				Name: name, FamilyIndex: 0, PerFamilyInstanceIndex: index, RunName: name,
				RunType: "iteration", Repetitions: repetitions, RepetitionIndex: rep, Threads: 1,
				Iterations: iterations, RealTime: realMs, CPUTime: cpuMs, TimeUnit: "ms",
				ItemsPerSecond: ips,
			})
		}
	}

	host, _ := os.Hostname()
	rep := report{
		Context: benchContext{
			Date:             time.Now().Format("2006-01-02T15:04:05-07:00"),
			HostName:         host,
			Executable:       os.Args[0],
			NumCPUs:          runtime.NumCPU(),
			MHzPerCPU:        mhzPerCPU(),
			LoadAvg:          loadAvg(),
			LibraryBuildType: "release",
			Library:          runtime.Version(),
			Compiler:         runtime.Compiler + " " + runtime.Version(),
		},
		Benchmarks: benchmarks,
	}
	text, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		fmt.Fprintln(os.Stderr, "go_yield:", err)
		os.Exit(1)
	}
	text = append(text, '\n')
	if outPath == "" {
		os.Stdout.Write(text)
		return
	}
	if err := os.WriteFile(outPath, text, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "go_yield:", err)
		os.Exit(1)
	}
}
