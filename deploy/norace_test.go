//go:build !race

package deploy

// raceFlags: none, in a test binary built without -race.
var raceFlags []string
