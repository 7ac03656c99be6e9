package deployment

// The accepted values of the enumerated fields, in the order the
// documentation lists them.
var (
	Drivers    = []string{DriverModbusTCP, DriverSimulated, DriverOPCUA}
	Policies   = []string{PolicyNone, PolicyBasic256Sha256, PolicyAes128Sha256RsaOaep, PolicyAes256Sha256RsaPss}
	Modes      = []string{ModeNone, ModeSign, ModeSignAndEncrypt}
	Tables     = []string{TableHolding, TableInput, TableCoil, TableDiscrete}
	Types      = []string{TypeBool, TypeInt16, TypeUint16, TypeInt32, TypeUint32, TypeFloat32, TypeFloat64}
	WordOrders = []string{WordOrderBig, WordOrderLittle}
	Signals    = []string{SignalRamp, SignalSine, SignalSquare, SignalRandomWalk, SignalConstant}
)

// numericTypes are the types a register (holding, input) holds.
var numericTypes = Types[1:]

// Span is how many consecutive registers (holding, input) or bits (coil,
// discrete) the tag occupies from Address: 4 for float64, 2 for the other
// 32-bit types, else 1.
func (t *Tag) Span() int { return typeSpan(t.Type) }

func typeSpan(typ string) int {
	switch typ {
	case TypeInt32, TypeUint32, TypeFloat32:
		return 2
	case TypeFloat64:
		return 4
	}
	return 1
}

// EffectiveWordOrder is WordOrder, or WordOrderBig (high word first) when
// absent.
func (t *Tag) EffectiveWordOrder() string {
	if t.WordOrder == "" {
		return WordOrderBig
	}
	return t.WordOrder
}

// Scaled reports whether Scale or Offset is set: the value is then
// raw × Scale + Offset (Scale defaults to 1, Offset to 0) and its OPC UA
// DataType is Double.
func (t *Tag) Scaled() bool { return t.Scale != nil || t.Offset != nil }

func isNumeric(typ string) bool { return contains(numericTypes, typ) }

// isWide reports a 32- or 64-bit type, the ones a word order applies to.
func isWide(typ string) bool { return typeSpan(typ) > 1 }

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
