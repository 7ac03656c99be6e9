//go:build !race

package singleton_test

const raceDetector = false
