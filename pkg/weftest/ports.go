package weftest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"sync"
	"testing"
)

// Ports FreePort draws from: below the kernel's ephemeral range (32768 and
// up on Linux), where an outgoing connection could take a port between
// FreePort's check and the server's listen.
const (
	freePortMin = 20000
	freePortMax = 32767
)

// given are the ports FreePort has returned in this process.
var given struct {
	sync.Mutex
	ports map[int]bool
}

// FreePort returns a loopback port that nothing listens on now, for a
// server that must know its port before it starts (a cluster's routes, a
// process's flags). It never returns the same port twice in one process,
// so two servers of one test cannot be handed one port.
func FreePort(t testing.TB) int {
	t.Helper()
	given.Lock()
	defer given.Unlock()
	if given.ports == nil {
		given.ports = map[int]bool{}
	}
	for range 1000 {
		port := freePortMin + rand.IntN(freePortMax-freePortMin+1) //nolint:gosec // not a secret
		if given.ports[port] {
			continue
		}
		l, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			continue // taken
		}
		_ = l.Close()
		given.ports[port] = true
		return port
	}
	t.Fatalf("weftest: no free loopback port in %d-%d after 1000 tries", freePortMin, freePortMax)
	return 0
}
