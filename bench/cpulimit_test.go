package bench

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// cpuPeriod is the CFS period a cpuLimit sets: short, so that a group
// under its quota is paused for at most a few milliseconds at a time
// instead of the default period's 100.
const cpuPeriod = 10 * time.Millisecond

// cpuLimit is a CPU cgroup this process has moved itself into: it, and
// every process it starts from then on (weft dev, a private Postgres and
// its backends), share one CPU quota, which set changes while they run.
// It works on cgroup v1's cpu controller and on cgroup v2 where the cpu
// controller can be enabled for the process's group's children; both
// need the right to write the group (root, or a delegated subtree).
type cpuLimit struct {
	dir string // the group's directory
	// home is the cgroup.procs of the group the process came from, where
	// close moves it back.
	home string
	v2   bool
}

// newCPULimit creates a group under the process's own cpu cgroup, with no
// quota yet, and moves the process into it.
func newCPULimit() (*cpuLimit, error) {
	mount, self, v2, err := cpuCgroup()
	if err != nil {
		return nil, err
	}
	parent := filepath.Join(mount, self)
	if v2 {
		// The controller must be on for the parent's children; a v2
		// group with processes of its own cannot enable it, except the
		// root.
		if err := os.WriteFile(filepath.Join(parent, "cgroup.subtree_control"), []byte("+cpu"), 0); err != nil {
			return nil, fmt.Errorf("enable the cpu controller under %s: %w", parent, err)
		}
	}
	dir, err := os.MkdirTemp(parent, "weft-bench-")
	if err != nil {
		return nil, fmt.Errorf("create a cpu cgroup: %w", err)
	}
	l := &cpuLimit{dir: dir, home: filepath.Join(parent, "cgroup.procs"), v2: v2}
	if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(os.Getpid())), 0); err != nil {
		_ = os.Remove(dir)
		return nil, fmt.Errorf("move this process into %s: %w", dir, err)
	}
	return l, nil
}

// cpuCgroup finds the cpu controller: its mount, the process's group
// under it, and whether it is cgroup v2.
func cpuCgroup() (mount, self string, v2 bool, err error) {
	f, err := os.Open("/proc/self/cgroup")
	if err != nil {
		return "", "", false, err
	}
	defer func() { _ = f.Close() }()
	var unified string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// hierarchy-ID:controllers:path; v2's line is 0::path.
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		if parts[1] == "" {
			unified = parts[2]
			continue
		}
		for _, c := range strings.Split(parts[1], ",") {
			if c != "cpu" {
				continue
			}
			for _, m := range []string{"/sys/fs/cgroup/cpu", "/sys/fs/cgroup/cpu,cpuacct"} {
				if _, err := os.Stat(filepath.Join(m, "cpu.cfs_quota_us")); err == nil {
					return m, parts[2], false, nil
				}
			}
		}
	}
	if err := sc.Err(); err != nil {
		return "", "", false, err
	}
	if unified != "" {
		if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil {
			return "/sys/fs/cgroup", unified, true, nil
		}
	}
	return "", "", false, errors.New("no cgroup cpu controller found (/proc/self/cgroup, /sys/fs/cgroup)")
}

// set gives the group cores CPUs' worth of time every period.
func (l *cpuLimit) set(cores float64) error {
	period := cpuPeriod.Microseconds()
	quota := int64(cores * float64(period))
	if l.v2 {
		return os.WriteFile(filepath.Join(l.dir, "cpu.max"), fmt.Appendf(nil, "%d %d", quota, period), 0)
	}
	// v1 checks the quota against the period in force: lower it first.
	if err := os.WriteFile(filepath.Join(l.dir, "cpu.cfs_quota_us"), []byte("-1"), 0); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(l.dir, "cpu.cfs_period_us"), []byte(strconv.FormatInt(period, 10)), 0); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(l.dir, "cpu.cfs_quota_us"), []byte(strconv.FormatInt(quota, 10)), 0)
}

// throttle is the group's cpu.stat counters: the periods it ran in and of
// them those in which it spent its quota and was paused.
type throttle struct{ periods, throttled int64 }

func (l *cpuLimit) throttle() (throttle, error) {
	raw, err := os.ReadFile(filepath.Join(l.dir, "cpu.stat"))
	if err != nil {
		return throttle{}, err
	}
	var t throttle
	for _, line := range strings.Split(string(raw), "\n") {
		k, v, _ := strings.Cut(line, " ")
		n, _ := strconv.ParseInt(v, 10, 64)
		switch k {
		case "nr_periods":
			t.periods = n
		case "nr_throttled":
			t.throttled = n
		}
	}
	return t, nil
}

// share is the share of since's periods to t in which the group was
// throttled, in percent.
func (t throttle) share(since throttle) float64 {
	if t.periods == since.periods {
		return 0
	}
	return 100 * float64(t.throttled-since.throttled) / float64(t.periods-since.periods)
}

// close moves the process back to its group and removes the limit's,
// waiting a little for the processes it started to be gone from it.
func (l *cpuLimit) close() error {
	if err := os.WriteFile(l.home, []byte(strconv.Itoa(os.Getpid())), 0); err != nil {
		return fmt.Errorf("move this process back: %w", err)
	}
	var err error
	for range 50 {
		if err = os.Remove(l.dir); err == nil {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("remove %s: %w", l.dir, err)
}
