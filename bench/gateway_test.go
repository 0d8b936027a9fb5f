package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/weftrun/weft/internal/policy/auth"
	"github.com/weftrun/weft/internal/policy/keylimit"
	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/pkg/weftest"
	gateway "github.com/weftrun/weft/services/signal-gateway"
)

// Issue #4's figures: signals accepted per second over HTTP by 32
// concurrent clients, with unique signalIds and with half of them
// repeats, and their p50/p99 latency.
const (
	gatewayClients = 32
	gatewayRuns    = 256
	gatewayToken   = "weft_bench_token"
)

func BenchmarkGatewaySignals(b *testing.B) {
	b.Run("unique", func(b *testing.B) { benchSignals(b, false) })
	b.Run("dup50", func(b *testing.B) { benchSignals(b, true) })
}

func benchSignals(b *testing.B, duplicates bool) {
	base := startGateway(b)
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: gatewayClients}}
	runs := make([]string, gatewayRuns)
	for i := range runs {
		var res api.StartRunResult
		if err := postJSON(hc, base+"/v1/runs", startRequest(i), &res); err != nil {
			b.Fatal(err)
		}
		runs[i] = res.RunID
	}
	var lat latencies
	b.ResetTimer()
	elapsed := parallel(b, gatewayClients, b.N, func(_, i int) error {
		id := i
		if duplicates {
			id = i / 2 * 2 // requests 2k and 2k+1 carry one signal
		}
		body := api.SignalRequest{SignalName: "go", SignalID: fmt.Sprintf("sig-%d", id), Payload: json.RawMessage(`{"ok":true}`)}
		start := time.Now()
		var res api.AcceptedSignalResult
		if err := postJSON(hc, base+"/v1/runs/"+runs[id%gatewayRuns]+"/signals", body, &res); err != nil {
			return err
		}
		lat.add(time.Since(start))
		return nil
	})
	b.StopTimer()
	report(b, b.N, elapsed, "signals/s", &lat)
}

// startGateway serves a gateway over a fresh database on a loopback port
// and returns its base URL.
func startGateway(b *testing.B) string {
	db := weftest.NewDB(b)
	keys, err := auth.NewKeys(auth.Key{Name: "bench", TenantID: "acme", Role: auth.RoleOperator, Hash: auth.HashKey(gatewayToken)})
	if err != nil {
		b.Fatal(err)
	}
	// The bench measures the gateway's ceiling: no per-key request rate.
	cfg := gateway.Config{Keys: keys, KeyRate: keylimit.Off, Intake: gateway.IntakeConfig{MaxSignalsPerRunMinute: 1 << 30}}
	gw, err := gateway.New(db.Pool, nil, cfg)
	if err != nil {
		b.Fatal(err)
	}
	ln, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- gw.Serve(ctx, ln) }()
	b.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			b.Error(err)
		}
	})
	return "http://" + ln.Addr().String()
}

func startRequest(i int) api.StartRunRequest {
	return api.StartRunRequest{TenantID: "acme", ProjectID: "bench", EnvironmentID: "bench", PlanID: "gate", PlanVersion: "1",
		RunRequestID: fmt.Sprintf("bench-%d", i),
		Plan:         json.RawMessage(`{"planId":"gate","planVersion":"1","steps":[{"id":"w","kind":"waitSignal","signal":"go"}]}`)}
}

// postJSON posts v as the bench key and decodes a 2xx answer into out.
func postJSON(hc *http.Client, url string, v, out any) error {
	body, err := json.Marshal(v)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+gatewayToken)
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("POST %s: %d %s", url, resp.StatusCode, raw)
	}
	return json.Unmarshal(raw, out)
}
