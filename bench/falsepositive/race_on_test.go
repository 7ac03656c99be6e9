//go:build race

package main

// raceDetector: the race pass of scripts/test.sh runs every package side
// by side; this test's load would starve them, so it runs in the pass
// after it, alone and without the race detector (scripts/test.sh).
const raceDetector = true
