// Package benchline reads the result lines of Go benchmark output (`go
// test -bench`, or a program printing the same format) and the figures
// the peer table compares out of them.
package benchline

import (
	"bufio"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Result is one benchmark result line: its name without the GOMAXPROCS
// suffix, and its metrics by unit (ns/op, runs/s, p50_ms, …).
type Result struct {
	Name    string
	Metrics map[string]float64
}

// procsSuffix is the -GOMAXPROCS suffix `go test` adds to a name.
var procsSuffix = regexp.MustCompile(`-[0-9]+$`)

// Parse reads every result line from r: a line whose first field starts
// with "Benchmark", whose second is an iteration count, followed by value
// and unit pairs. Other lines (logs, config lines, PASS) are skipped, and
// so is a line whose pairs do not parse; a unit seen twice keeps its
// first value.
func Parse(r io.Reader) ([]Result, error) {
	var out []Result
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		if res, ok := parseLine(sc.Text()); ok {
			out = append(out, res)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read benchmark output: %w", err)
	}
	return out, nil
}

func parseLine(line string) (Result, bool) {
	f := strings.Fields(line)
	if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") || len(f)%2 != 0 {
		return Result{}, false
	}
	if _, err := strconv.ParseUint(f[1], 10, 64); err != nil {
		return Result{}, false
	}
	res := Result{Name: procsSuffix.ReplaceAllString(f[0], ""), Metrics: map[string]float64{}}
	for i := 2; i+1 < len(f); i += 2 {
		v, err := strconv.ParseFloat(f[i], 64)
		if err != nil {
			return Result{}, false
		}
		if _, seen := res.Metrics[f[i+1]]; !seen {
			res.Metrics[f[i+1]] = v
		}
	}
	return res, true
}

// Sub is the part of a result's name after the first slash ("closed",
// "open=100"); empty for a name with none.
func (r Result) Sub() string {
	_, sub, _ := strings.Cut(r.Name, "/")
	return sub
}

// Rate is the offered rate a sub-benchmark's name carries as "=N" (open=100,
// cost=100/…), and whether it carries one.
func (r Result) Rate() (int, bool) {
	m := rateInName.FindStringSubmatch(r.Sub())
	if m == nil {
		return 0, false
	}
	n, err := strconv.Atoi(m[1])
	return n, err == nil
}

var rateInName = regexp.MustCompile(`=([0-9]+)`)

// CPUPerRun is the result's machine CPU per run in milliseconds: the unit
// "cpu_ms/run" when present, else, of the units that mention cpu and are
// per run, the first by name that says machine, else the first by name.
func (r Result) CPUPerRun() (float64, bool) {
	if v, ok := r.Metrics["cpu_ms/run"]; ok {
		return v, true
	}
	var units []string
	for unit := range r.Metrics {
		u := strings.ToLower(unit)
		if strings.Contains(u, "cpu") && strings.HasSuffix(u, "/run") {
			units = append(units, unit)
		}
	}
	if len(units) == 0 {
		return 0, false
	}
	slices.Sort(units)
	pick := units[0]
	if i := slices.IndexFunc(units, func(u string) bool { return strings.Contains(strings.ToLower(u), "machine") }); i >= 0 {
		pick = units[i]
	}
	return r.Metrics[pick], true
}
