package bench

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/weftrun/weft/internal/boot/pgboot"
)

// cpuByProcess is the CPU time so far of the topology's processes: weft
// dev, inst's server, and this load generator.
func (s *devStack) cpuByProcess(b *testing.B, inst *pgboot.Instance) map[string]time.Duration {
	return map[string]time.Duration{
		"weft dev":       procCPU(s.cmd.Process.Pid),
		"postgres":       postgresCPU(b, inst),
		"load generator": selfCPU(),
	}
}

// selfCPU is this process's user and system CPU time so far: the load
// generator's.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// machineCPU is the time every CPU of the machine has spent not idle, less
// this load generator's own: the CPU a load cost the system under test,
// whatever processes it runs in (and whatever else the machine ran).
func machineCPU(b *testing.B) time.Duration {
	return machineBusy(b) - selfCPU()
}

// procCPU is a process's user and system CPU time so far (0 when it is
// gone).
func procCPU(pid int) time.Duration {
	f := procStat(pid)
	if len(f) < 13 {
		return 0
	}
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(utime+stime) * time.Second / clockTicks
}

// procStat is /proc/<pid>/stat's fields after the command's name (which is
// in parentheses and may hold spaces): the state is [0], the parent's pid
// [1]. Nil when the process is gone.
func procStat(pid int) []string {
	raw, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return nil
	}
	return strings.Fields(string(raw[strings.LastIndexByte(string(raw), ')')+1:]))
}

// clockTicks is Linux's USER_HZ, the unit of /proc's CPU times.
const clockTicks = 100

// postgresCPU is the CPU time of inst's server: its postmaster and every
// process it started that still runs.
func postgresCPU(b *testing.B, inst *pgboot.Instance) time.Duration {
	raw, err := os.ReadFile(filepath.Join(inst.DataDir(), "data", "postmaster.pid"))
	if err != nil {
		b.Fatal(err)
	}
	postmaster, err := strconv.Atoi(strings.SplitN(string(raw), "\n", 2)[0])
	if err != nil {
		b.Fatal(err)
	}
	total := procCPU(postmaster)
	parent := strconv.Itoa(postmaster)
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if f := procStat(pid); len(f) > 1 && f[1] == parent {
			total += procCPU(pid)
		}
	}
	return total
}

// machineBusy is the time every CPU of the machine has spent not idle.
func machineBusy(b *testing.B) time.Duration {
	raw, err := os.ReadFile("/proc/stat")
	if err != nil {
		b.Fatal(err)
	}
	f := strings.Fields(strings.SplitN(string(raw), "\n", 2)[0])[1:] // cpu user nice system idle iowait irq softirq steal
	var busy int64
	for i, v := range f {
		n, _ := strconv.ParseInt(v, 10, 64)
		if i != 3 && i != 4 && i < 8 { // not idle, not iowait
			busy += n
		}
	}
	return time.Duration(busy) * time.Second / clockTicks
}
