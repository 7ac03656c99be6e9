//go:build race

package daemon

const raceDetector = true
