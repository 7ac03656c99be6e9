package fielddevice

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

// Table is one of the four Modbus data tables.
type Table uint8

const (
	Holding  Table = iota + 1 // holding registers (read/write words)
	Input                     // input registers (read-only words)
	Coil                      // coils (read/write bits)
	Discrete                  // discrete inputs (read-only bits)
)

func (t Table) String() string {
	switch t {
	case Holding:
		return "holding"
	case Input:
		return "input"
	case Coil:
		return "coil"
	case Discrete:
		return "discrete"
	}
	return fmt.Sprintf("Table(%d)", uint8(t))
}

// Write stores Words from Address on (Holding, Input) or Bit at Address
// (Coil, Discrete).
type Write struct {
	Table   Table
	Address uint16
	Words   []uint16
	Bit     bool
	// Client is the address (ip:port) of the connection that made the
	// write, as the device saw it; set in what Options.OnWrite receives,
	// ignored by Apply.
	Client string
}

// Point is one named value of a profile's register map.
type Point struct {
	Table   Table
	Address uint16
	Name    string
	// Type is the value's type as a deployment document names it: "int16",
	// "uint16", "float32" (two registers, the high word first) or "bool".
	Type string
	// Writable points are set once at start (Profile.Initial) and then
	// belong to the clients; Step never stores into them.
	Writable bool
	// Behaviour says how the value moves or what it starts at.
	Behaviour string
}

// Words is the number of registers the point takes (0 for a bit).
func (p Point) Words() int {
	switch p.Type {
	case "bool":
		return 0
	case "float32":
		return 2
	}
	return 1
}

// String is e.g. "holding 10-11 Speed float32: sine 0…1500, period 60 s".
func (p Point) String() string {
	addr := fmt.Sprint(p.Address)
	if p.Words() > 1 {
		addr = fmt.Sprintf("%d-%d", p.Address, int(p.Address)+p.Words()-1)
	}
	s := fmt.Sprintf("%s %s %s %s", p.Table, addr, p.Name, p.Type)
	if p.Writable {
		s += " writable"
	}
	if p.Behaviour != "" {
		s += ": " + p.Behaviour
	}
	return s
}

// Profile is a named register map whose values move with time.
type Profile struct {
	Name   string
	Points []Point
	// Initial are the values stored once at start, the writable points'
	// among them.
	Initial []Write
	// Step returns the moving points' values `elapsed` after start. It is
	// pure (the same elapsed, the same writes) and never stores into a
	// writable point.
	Step func(elapsed time.Duration) []Write
	// Counters are input registers that Animate increments by exactly one
	// every period (Device.RunCounter), so that a client can tell from the
	// values alone whether it missed or repeated one. Step never stores
	// into them.
	Counters []Counter
}

// Counter is an input register that counts up by one every Period from 0,
// a uint16 that wraps from 65535 to 0.
type Counter struct {
	Address uint16
	Period  time.Duration
}

// Map is the register map on one line, the points separated by "; ".
func (p Profile) Map() string {
	parts := make([]string, len(p.Points))
	for i, pt := range p.Points {
		parts[i] = pt.String()
	}
	return strings.Join(parts, "; ")
}

// Profiles are the built-in profiles by name.
var Profiles = map[string]Profile{
	"press": Press,
	"tank":  Tank,
}

// ProfileNames are the built-in profiles' names, sorted.
func ProfileNames() []string {
	names := make([]string, 0, len(Profiles))
	for n := range Profiles {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// The press profile's points. Deployment documents depend on this map:
// change it only with them.
const (
	PressSetpoint    = 0  // holding, int16, writable, initial 50
	PressSpeed       = 10 // holding 10-11, float32, high word first
	PressTemperature = 0  // input, int16, raw ×0.1 = °C
	PressCounter     = 1  // input, uint16
	PressFastCounter = 2  // input, uint16, +1 every FastCounterPeriod
	PressRun         = 1  // coil, writable, initial true
	PressFault       = 0  // discrete
)

// FastCounterPeriod is the period of the press's FastCounter.
const FastCounterPeriod = 100 * time.Millisecond

// Press is a press: a setpoint and a run coil for clients to write, a
// speed, a temperature, a cycle counter and a fault that move.
var Press = Profile{
	Name: "press",
	Points: []Point{
		{Holding, PressSetpoint, "Setpoint", "int16", true, "initial 50"},
		{Holding, PressSpeed, "Speed", "float32", false, "big word order (high word first), sine 0…1500, period 60 s, 750 at start"},
		{Input, PressTemperature, "Temperature", "int16", false, "raw tenths of °C (scale 0.1), triangle 200…900 (20.0–90.0 °C), period 240 s, 200 at start"},
		{Input, PressCounter, "Counter", "uint16", false, "+1 every second from 0, wraps at 65535"},
		{Input, PressFastCounter, "FastCounter", "uint16", false, "+1 every 100 ms from 0 (exactly one per period, never skipping), wraps at 65535"},
		{Coil, PressRun, "Run", "bool", true, "initial true"},
		{Discrete, PressFault, "Fault", "bool", false, "true from 30 s to 35 s of every 60 s"},
	},
	Initial: []Write{
		{Table: Holding, Address: PressSetpoint, Words: []uint16{50}},
		{Table: Coil, Address: PressRun, Bit: true},
	},
	Step:     func(elapsed time.Duration) []Write { return PressAt(elapsed).Writes() },
	Counters: []Counter{{Address: PressFastCounter, Period: FastCounterPeriod}},
}

// PressValues are the press's moving values at one instant.
type PressValues struct {
	Speed       float32
	Temperature int16 // raw: tenths of a degree Celsius
	Counter     uint16
	Fault       bool
}

// PressAt is the press `elapsed` after start.
func PressAt(elapsed time.Duration) PressValues {
	minute := elapsed % time.Minute // into the current minute
	return PressValues{
		Speed:       float32(750 + 750*math.Sin(2*math.Pi*phase(elapsed, 60*time.Second))),
		Temperature: int16(math.Round(200 + 700*triangle(phase(elapsed, 240*time.Second)))),
		Counter:     uint16(elapsed / time.Second),
		Fault:       minute >= 30*time.Second && minute < 35*time.Second,
	}
}

// Writes are the register writes that store v.
func (v PressValues) Writes() []Write {
	bits := math.Float32bits(v.Speed)
	return []Write{
		{Table: Holding, Address: PressSpeed, Words: []uint16{uint16(bits >> 16), uint16(bits)}},
		{Table: Input, Address: PressTemperature, Words: []uint16{uint16(v.Temperature)}},
		{Table: Input, Address: PressCounter, Words: []uint16{v.Counter}},
		{Table: Discrete, Address: PressFault, Bit: v.Fault},
	}
}

// The tank profile's points.
const (
	TankLevel         = 0 // input, uint16
	TankValveSetpoint = 0 // holding, uint16, writable, initial 0
	TankHighLevel     = 0 // discrete
)

// Tank is a tank whose level rises and falls, with a valve setpoint for
// clients to write and a high-level alarm bit.
var Tank = Profile{
	Name: "tank",
	Points: []Point{
		{Input, TankLevel, "Level", "uint16", false, "triangle 0…1000, period 120 s, 0 at start"},
		{Holding, TankValveSetpoint, "ValveSetpoint", "uint16", true, "initial 0"},
		{Discrete, TankHighLevel, "HighLevel", "bool", false, "Level > 900"},
	},
	Initial: []Write{
		{Table: Holding, Address: TankValveSetpoint, Words: []uint16{0}},
	},
	Step: func(elapsed time.Duration) []Write { return TankAt(elapsed).Writes() },
}

// TankValues are the tank's moving values at one instant.
type TankValues struct {
	Level     uint16
	HighLevel bool
}

// TankAt is the tank `elapsed` after start.
func TankAt(elapsed time.Duration) TankValues {
	level := uint16(math.Round(1000 * triangle(phase(elapsed, 120*time.Second))))
	return TankValues{Level: level, HighLevel: level > 900}
}

// Writes are the register writes that store v.
func (v TankValues) Writes() []Write {
	return []Write{
		{Table: Input, Address: TankLevel, Words: []uint16{v.Level}},
		{Table: Discrete, Address: TankHighLevel, Bit: v.HighLevel},
	}
}

// phase is how far into its current period elapsed is, in [0, 1).
func phase(elapsed, period time.Duration) float64 {
	e := elapsed % period
	if e < 0 {
		e += period
	}
	return float64(e) / float64(period)
}

// triangle rises from 0 at phase 0 to 1 at phase 0.5 and falls back to 0.
func triangle(ph float64) float64 {
	if ph < 0.5 {
		return 2 * ph
	}
	return 2 - 2*ph
}
