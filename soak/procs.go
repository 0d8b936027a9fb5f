package soak

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"time"
)

// proc is one OS process of the topology, restartable. Each start is an
// instance with a log file of its own (<name>.<instance>.log), so the checker
// can tell which instance logged a line. Safe for concurrent use.
type proc struct {
	name string // unique: "engine-1"
	kind string // service kind: "engine", "nats-server", …
	path string
	args []string
	env  []string
	dir  string // the folder of the log files

	mu        sync.Mutex
	cmd       *exec.Cmd
	done      chan struct{}
	instance  int         // of the running (or last) start; 0 before the first
	instances []*instance // every start, in order
}

// instance is one start of a proc.
type instance struct {
	n       int
	log     string
	started time.Time
	killed  time.Time // zero unless it was killed with SIGKILL
	// signalled: the soak sent it SIGKILL or SIGTERM; exited: when it
	// exited (zero while it runs). An exit without a signal is a crash.
	signalled bool
	exited    time.Time
}

// start starts a new instance. It fails when one is running. ctx ending
// does not stop it: kill9 and stop end it, by its PID.
func (p *proc) start(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.running() {
		return fmt.Errorf("%s is already running", p.name)
	}
	inst := &instance{n: p.instance + 1, log: filepath.Join(p.dir, fmt.Sprintf("%s.%d.log", p.name, p.instance+1))}
	out, err := os.Create(inst.log)
	if err != nil {
		return fmt.Errorf("%s: log file: %w", p.name, err)
	}
	cmd := exec.CommandContext(context.WithoutCancel(ctx), p.path, p.args...)
	cmd.Env = p.env
	cmd.Stdout, cmd.Stderr = out, out
	// Its own process group: a Ctrl-C in the terminal reaches the soak,
	// which then ends each child by its PID.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		_ = out.Close()
		return fmt.Errorf("start %s: %w", p.name, err)
	}
	inst.started = time.Now()
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		_ = out.Close()
		p.mu.Lock()
		inst.exited = time.Now()
		p.mu.Unlock()
		close(done)
	}()
	p.cmd, p.done, p.instance = cmd, done, inst.n
	p.instances = append(p.instances, inst)
	return nil
}

// running reports whether the current instance has not exited; p.mu held.
func (p *proc) running() bool {
	if p.done == nil {
		return false
	}
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// alive reports whether the current instance has not exited.
func (p *proc) alive() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.running()
}

// kill9 sends SIGKILL to the running instance, by its PID, and waits for
// it to exit. It does nothing when none runs.
func (p *proc) kill9() {
	p.mu.Lock()
	if !p.running() {
		p.mu.Unlock()
		return
	}
	_ = p.cmd.Process.Kill() // by PID
	p.instances[len(p.instances)-1].killed = time.Now()
	p.instances[len(p.instances)-1].signalled = true
	done := p.done
	p.mu.Unlock()
	<-done // SIGKILL cannot be refused
}

// stop sends SIGTERM to the running instance and SIGKILL after grace.
func (p *proc) stop(grace time.Duration) {
	p.mu.Lock()
	if !p.running() {
		p.mu.Unlock()
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	p.instances[len(p.instances)-1].signalled = true
	done := p.done
	p.mu.Unlock()
	select {
	case <-done:
	case <-time.After(grace):
		p.kill9()
	}
}

// history returns a copy of the proc's instances.
func (p *proc) history() []instance {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]instance, len(p.instances))
	for i, in := range p.instances {
		out[i] = *in
	}
	return out
}

// logTail returns the last n bytes of the current instance's log.
func (p *proc) logTail(n int) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.instances) == 0 {
		return ""
	}
	b, err := os.ReadFile(p.instances[len(p.instances)-1].log)
	if err != nil {
		return err.Error()
	}
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}

// procs is every process the soak started, in start order.
type procs struct {
	mu   sync.Mutex
	list []*proc
}

// add registers p; stopAll ends it.
func (ps *procs) add(p *proc) *proc {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	ps.list = append(ps.list, p)
	return p
}

// ofKind returns the procs of one kind.
func (ps *procs) ofKind(kind string) []*proc {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	var out []*proc
	for _, p := range ps.list {
		if p.kind == kind {
			out = append(out, p)
		}
	}
	return out
}

// all returns every proc.
func (ps *procs) all() []*proc {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	return slices.Clone(ps.list)
}

// stopAll stops every process, in reverse start order, each by its PID:
// SIGTERM, then SIGKILL after grace.
func (ps *procs) stopAll(grace time.Duration) {
	list := ps.all()
	for i := len(list) - 1; i >= 0; i-- {
		list[i].stop(grace)
	}
}

// errExited is returned when a process exits while the soak waits for it.
var errExited = errors.New("process exited")
