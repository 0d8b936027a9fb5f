package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// clockTick is the unit of /proc's CPU times: USER_HZ, 100 on Linux.
const clockTick = 10 * time.Millisecond

// cpuSample is the CPU time spent so far: by the whole machine (busy, all
// cores), by this process (the load generator and DBOS client), by the
// worker process, and by each Postgres backend connected to the run's
// database.
type cpuSample struct {
	machine, self, worker time.Duration
	backends              map[int]time.Duration
}

// sampleCPU reads the machine's busy time from /proc/stat, this process's
// from getrusage, and the worker's and the database's backends' from
// /proc/<pid>/stat (the server runs on this machine).
func sampleCPU(ctx context.Context, workerPID int, pool *pgxpool.Pool) (cpuSample, error) {
	backends, err := backendsCPU(ctx, pool)
	if err != nil {
		return cpuSample{}, err
	}
	machine, err := machineBusy()
	if err != nil {
		return cpuSample{}, err
	}
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return cpuSample{}, fmt.Errorf("getrusage: %w", err)
	}
	worker, err := processCPU(workerPID)
	if err != nil {
		return cpuSample{}, err
	}
	self := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	return cpuSample{machine: machine, self: self, worker: worker, backends: backends}, nil
}

// cpuSpent is the CPU spent over a load.
type cpuSpent struct {
	// machine is all cores' busy time, this process's own excluded.
	machine time.Duration
	// self is this process's: the load generator and the DBOS client.
	self time.Duration
	// worker is the worker process's.
	worker time.Duration
	// postgres is the run database's backends' but the load generator's
	// own (the client's enqueues are counted): a backend that ended
	// within the load is missed, and the server's shared processes (WAL
	// writer, checkpointer) are not counted.
	postgres time.Duration
}

// since is the CPU spent between before and s.
func (s cpuSample) since(before cpuSample) cpuSpent {
	var pg time.Duration
	for pid, t := range s.backends {
		pg += t - before.backends[pid]
	}
	self := s.self - before.self
	return cpuSpent{machine: s.machine - before.machine - self, self: self, worker: s.worker - before.worker, postgres: pg}
}

// backendsCPU is the CPU time of each backend connected to pool's
// database but the load generator's own, by pid; a backend gone before it
// is read is left out.
func backendsCPU(ctx context.Context, pool *pgxpool.Pool) (map[int]time.Duration, error) {
	rows, err := pool.Query(ctx, `/* bench */ SELECT pid FROM pg_stat_activity
		WHERE datname = current_database() AND application_name <> $1`, loadgenApp)
	if err != nil {
		return nil, fmt.Errorf("list backends: %w", err)
	}
	defer rows.Close()
	out := map[int]time.Duration{}
	for rows.Next() {
		var pid int
		if err := rows.Scan(&pid); err != nil {
			return nil, fmt.Errorf("list backends: %w", err)
		}
		if t, err := processCPU(pid); err == nil {
			out[pid] = t
		}
	}
	return out, rows.Err()
}

// machineBusy is the busy time of all cores: /proc/stat's first line, every
// field but idle and iowait (guest time is already within user).
func machineBusy() (time.Duration, error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, fmt.Errorf("read /proc/stat: %w", err)
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return 0, fmt.Errorf("unexpected /proc/stat line %q", line)
	}
	var ticks int64
	for i, name := range []string{"user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal"} {
		v, err := strconv.ParseInt(f[i+1], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/stat %s: %w", name, err)
		}
		if name != "idle" && name != "iowait" {
			ticks += v
		}
	}
	return time.Duration(ticks) * clockTick, nil
}

// processCPU is a process's user and system time from /proc/<pid>/stat.
func processCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, fmt.Errorf("read process stat: %w", err)
	}
	// The command name (field 2) may hold spaces; the fields after it
	// start at the last ')'. utime and stime are fields 14 and 15.
	i := strings.LastIndexByte(string(b), ')')
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("unexpected process stat %q", b)
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("unexpected process stat %q", b)
	}
	return time.Duration(utime+stime) * clockTick, nil
}
