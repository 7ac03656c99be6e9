//go:build race

package pubsub_test

const raceDetector = true
