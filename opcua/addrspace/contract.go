package addrspace

import (
	"github.com/otopcua/otopcua/opcua/subscription"
	"github.com/otopcua/otopcua/opcua/uaserver"
)

var (
	_ uaserver.NodeStore       = (*AddressSpace)(nil)
	_ uaserver.WriterStore     = (*AddressSpace)(nil)
	_ subscription.Source      = (*Source)(nil)
	_ subscription.EventSource = (*Source)(nil)
)
