//go:build race

package deploy

// raceFlags are the go build flags the test binary was built with that
// its helper builds repeat: -race, under `make test`.
var raceFlags = []string{"-race"}
