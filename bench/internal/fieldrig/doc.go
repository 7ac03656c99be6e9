// Package fieldrig is the field side of the harnesses that measure
// otopcua's data plane: Modbus TCP field devices (internal/fielddevice)
// served by the harness's own process on loopback ports, the layout of the
// tags over their holding registers, the deployment document that declares
// those tags, the clock of a register changer, and the tags' NodeIds and
// Good reads on a node.
//
// Tag k is register k % PerDevice of device k / PerDevice; device d is
// named "dev%02d" and register r "r%04d", so tag k's browse path below the
// tag namespace is "dev03/r0042".
package fieldrig
