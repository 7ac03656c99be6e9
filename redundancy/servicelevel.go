package redundancy

import "github.com/otopcua/otopcua/redundancy/servicelevel"

// FreshFor is how long a DB health result, a redundancy snapshot or an OPC
// UA probe result stays current (servicelevel.FreshFor). The ServiceLevel
// itself is decided by servicelevel.Of alone; this package gathers its
// inputs (Observed.Inputs) and publishes the result (PublishActor).
const FreshFor = servicelevel.FreshFor
