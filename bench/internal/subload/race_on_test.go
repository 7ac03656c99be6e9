//go:build race

package subload

// gopcua's own server races between value updates and reads (a defect
// otopcua replaces); under -race the in-process tests run otopcua only. The
// harness still measures gopcua as a separate process.
const raceEnabled = true
