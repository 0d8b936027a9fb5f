package weftest

import (
	"bytes"
	"sync"
)

// Buffer is a bytes.Buffer safe for concurrent use: the sink of a logger or
// a command's output that goroutines under test write while the test reads.
type Buffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write appends p. It never fails.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns everything written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
