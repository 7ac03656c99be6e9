//go:build race

package actors_test

const raceDetector = true
