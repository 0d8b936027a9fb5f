// Command peertable prints Weft's headline benchmark and the DBOS peer
// side by side, from their outputs of one or more interleaved pairs:
//
//	peertable -weft w1.txt,w2.txt -dbos d1.txt,d2.txt
//
// A cell is the median over the pairs, with the range when there are
// several; "-" where a side printed no such figure. Metrics it does not
// know are ignored, so either side may print more.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/weftrun/weft/bench/peers/dbos/internal/benchline"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil && !errors.Is(err, flag.ErrHelp) {
		fmt.Fprintln(os.Stderr, "peertable:", err)
		os.Exit(1)
	}
}

func run(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("peertable", flag.ContinueOnError)
	weftFiles := fs.String("weft", "", "comma-separated outputs of BenchmarkSystem, one a pair")
	dbosFiles := fs.String("dbos", "", "comma-separated outputs of dbospeer, one a pair")
	if err := fs.Parse(args); err != nil {
		return err
	}
	weft, err := readSide(*weftFiles, "BenchmarkSystem/")
	if err != nil {
		return err
	}
	dbos, err := readSide(*dbosFiles, "BenchmarkDBOS/")
	if err != nil {
		return err
	}
	_, err = io.WriteString(out, table(weft, dbos))
	return err
}

// side is one system's figures: for each pair, its results by sub-benchmark.
type side []map[string]benchline.Result

// readSide reads each comma-separated file as one pair's output, keeping
// the results named with prefix.
func readSide(files, prefix string) (side, error) {
	var s side
	for name := range strings.SplitSeq(files, ",") {
		if name == "" {
			continue
		}
		f, err := os.Open(name) // #nosec G304 -- a file the caller names
		if err != nil {
			return nil, err
		}
		res, err := benchline.Parse(f)
		_ = f.Close()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		pair := map[string]benchline.Result{}
		for _, r := range res {
			if strings.HasPrefix(r.Name, prefix) {
				pair[r.Sub()] = r
			}
		}
		s = append(s, pair)
	}
	return s, nil
}

// figure reads one number out of a pair's results, and whether it is there.
type figure func(pair map[string]benchline.Result) (float64, bool)

// metric is unit from the sub-benchmark sub.
func metric(sub, unit string) figure {
	return func(pair map[string]benchline.Result) (float64, bool) {
		v, ok := pair[sub].Metrics[unit]
		return v, ok
	}
}

// cpuAt is the machine CPU per run of the sub-benchmark sub or, for
// sub "" and a rate, of the first sub-benchmark carrying that rate and a
// CPU figure (an open row, or a cost row beside it).
func cpuAt(sub string, rate int) figure {
	return func(pair map[string]benchline.Result) (float64, bool) {
		if sub != "" {
			return pair[sub].CPUPerRun()
		}
		for _, name := range sortedSubs(pair) {
			r := pair[name]
			if got, ok := r.Rate(); ok && got == rate {
				if v, ok := r.CPUPerRun(); ok {
					return v, true
				}
			}
		}
		return 0, false
	}
}

// sortedSubs is pair's sub-benchmark names, open=… first, then by name.
func sortedSubs(pair map[string]benchline.Result) []string {
	names := make([]string, 0, len(pair))
	for n := range pair {
		names = append(names, n)
	}
	slices.SortFunc(names, func(a, b string) int {
		ao, bo := strings.HasPrefix(a, "open="), strings.HasPrefix(b, "open=")
		if ao != bo {
			if ao {
				return -1
			}
			return 1
		}
		return strings.Compare(a, b)
	})
	return names
}

// row is one line of the table.
type row struct {
	label string
	get   figure
}

// rows are the table's lines: the closed load, each open rate either side
// ran, the awaiting closed load (the peer's only), and the ceiling.
func rows(weft, dbos side) []row {
	rs := []row{
		{"closed runs/s", metric("closed", "runs/s")},
		{"closed CPU ms/run (machine)", cpuAt("closed", 0)},
		{"closed CPU ms/run (worker+pg backends)", metric("closed", "own_cpu_ms/run")},
		{"closed p50 ms", metric("closed", "p50_ms")},
		{"closed p99 ms", metric("closed", "p99_ms")},
	}
	for _, rate := range rates(weft, dbos) {
		sub := fmt.Sprintf("open=%d", rate)
		rs = append(rs,
			row{sub + " runs/s", metric(sub, "runs/s")},
			row{sub + " CPU ms/run (machine)", cpuAt("", rate)},
			row{sub + " CPU ms/run (worker+pg backends)", metric(sub, "own_cpu_ms/run")},
			row{sub + " p50 ms", metric(sub, "p50_ms")},
			row{sub + " p99 ms", metric(sub, "p99_ms")},
		)
	}
	return append(rs,
		row{"closed, awaiting each result: runs/s", metric("closed_await", "runs/s")},
		row{"closed, awaiting each result: p50 ms", metric("closed_await", "p50_ms")},
		row{"closed, awaiting each result: p99 ms", metric("closed_await", "p99_ms")},
		row{"insert ceiling commits/s", metric("closed", "ceiling_commits/s")},
		row{"closed runs per commit", func(p map[string]benchline.Result) (float64, bool) {
			rate, ok1 := p["closed"].Metrics["runs/s"]
			ceiling, ok2 := p["closed"].Metrics["ceiling_commits/s"]
			return rate / ceiling, ok1 && ok2 && ceiling > 0
		}},
	)
}

// rates is every open=R rate either side printed, ascending.
func rates(sides ...side) []int {
	var out []int
	for _, s := range sides {
		for _, pair := range s {
			for name, r := range pair {
				if n, ok := r.Rate(); ok && strings.HasPrefix(name, "open=") && !slices.Contains(out, n) {
					out = append(out, n)
				}
			}
		}
	}
	slices.Sort(out)
	return out
}

// table is a line for every row either side has a figure for: the label
// left-aligned, the two cells right-aligned.
func table(weft, dbos side) string {
	var b strings.Builder
	fmt.Fprintf(&b, "\nWeft BenchmarkSystem vs DBOS peer: %d and %d pairs; a cell is the median (min-max over pairs)\n\n", len(weft), len(dbos))
	lines := [][3]string{{"figure", "Weft", "DBOS"}}
	for _, r := range rows(weft, dbos) {
		w, d := cell(weft, r.get), cell(dbos, r.get)
		if w != "-" || d != "-" {
			lines = append(lines, [3]string{r.label, w, d})
		}
	}
	var width [3]int
	for _, l := range lines {
		for i, c := range l {
			width[i] = max(width[i], len(c))
		}
	}
	for _, l := range lines {
		fmt.Fprintf(&b, "%-*s  %*s  %*s\n", width[0], l[0], width[1], l[1], width[2], l[2])
	}
	return b.String()
}

// cell is the median of get over the side's pairs, with the range when
// more than one pair has it; "-" when none does.
func cell(s side, get figure) string {
	var vs []float64
	for _, pair := range s {
		if v, ok := get(pair); ok {
			vs = append(vs, v)
		}
	}
	if len(vs) == 0 {
		return "-"
	}
	slices.Sort(vs)
	med := vs[len(vs)/2]
	if len(vs)%2 == 0 {
		med = (vs[len(vs)/2-1] + vs[len(vs)/2]) / 2
	}
	if len(vs) == 1 {
		return format(med)
	}
	return fmt.Sprintf("%s (%s-%s)", format(med), format(vs[0]), format(vs[len(vs)-1]))
}

// format prints v with the digits a figure of its size needs.
func format(v float64) string {
	switch {
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	case v >= 1:
		return fmt.Sprintf("%.2f", v)
	default:
		return fmt.Sprintf("%.4f", v)
	}
}
