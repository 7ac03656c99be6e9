package opcua

import (
	"fmt"
	"time"

	"github.com/gopcua/opcua/id"
	"github.com/gopcua/opcua/ua"

	"github.com/otopcua/otopcua/opcua/addrspace"
	"github.com/otopcua/otopcua/opcua/subscription"
)

func nsid(n uint32) *ua.NodeID { return ua.NewNumericNodeID(0, n) }

// initServerObject fills the Server object (i=2253) of the fresh address
// space: the redundancy nodes, ServerStatus, ServerCapabilities and the
// other properties the standard nodeset leaves without values.
func (s *Server) initServerObject() error {
	vars := map[uint32]**addrspace.Variable{
		id.Server_ServiceLevel:                          &s.nodes.serviceLevel,
		id.Server_ServerStatus:                          &s.nodes.serverStatus,
		id.Server_ServerStatus_StartTime:                &s.nodes.startTime,
		id.Server_ServerStatus_CurrentTime:              &s.nodes.currentTime,
		id.Server_ServerStatus_State:                    &s.nodes.state,
		id.Server_ServerRedundancy_RedundantServerArray: &s.nodes.redundantServers,
	}
	for n, p := range vars {
		v, err := s.space.Variable(nsid(n))
		if err != nil {
			return fmt.Errorf("opcua: the standard nodeset lacks a Server variable: %w", err)
		}
		*p = v
	}
	if err := s.initRedundancy(); err != nil {
		return err
	}
	s.initStatus()
	return s.setAll(s.capabilities())
}

// initRedundancy types Server.ServerRedundancy (i=2296) as
// NonTransparentRedundancyType (the nodeset gives it ServerRedundancyType)
// and links and fills its properties: RedundancySupport (i=3709),
// ServerUriArray (i=11314, this server first: Part 5 §6.3.9 "shall contain
// the local Server") and RedundantServerArray (i=11313, optional for
// NonTransparent; published so that a client sees every server's
// ServiceLevel and state from any one of them).
func (s *Server) initRedundancy() error {
	redundancy := nsid(id.Server_ServerRedundancy)
	steps := []func() error{
		func() error {
			return s.space.DeleteReference(redundancy, nsid(id.HasTypeDefinition), nsid(id.ServerRedundancyType))
		},
		func() error {
			return s.space.AddReference(redundancy, nsid(id.HasTypeDefinition), nsid(id.NonTransparentRedundancyType))
		},
		func() error {
			return s.space.AddReference(redundancy, nsid(id.HasProperty), nsid(id.Server_ServerRedundancy_ServerURIArray))
		},
		func() error {
			return s.space.AddReference(redundancy, nsid(id.HasProperty), nsid(id.Server_ServerRedundancy_RedundantServerArray))
		},
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return fmt.Errorf("opcua: ServerRedundancy: %w", err)
		}
	}
	uris := s.cfg.serverURIs()
	err := s.setAll(map[uint32]any{
		id.Server_ServiceLevel:                       InitialServiceLevel,
		id.Server_ServerArray:                        uris,
		id.Server_ServerRedundancy_RedundancySupport: int32(s.cfg.RedundancySupport),
		id.Server_ServerRedundancy_ServerURIArray:    uris,
		id.Server_Auditing:                           false,
		id.Server_EstimatedReturnTime:                time.Time{},
	})
	if err != nil {
		return err
	}
	s.publishRedundantServers()
	return nil
}

// initStatus fills Server.ServerStatus and its children. ServerStatus and
// CurrentTime read the time of the read; the ticker started by Start also
// pushes them to subscribers every second.
func (s *Server) initStatus() {
	b := s.cfg.BuildInfo
	static := map[uint32]any{
		id.Server_ServerStatus_StartTime:                  s.start,
		id.Server_ServerStatus_State:                      int32(ua.ServerStateRunning),
		id.Server_ServerStatus_BuildInfo:                  ua.NewExtensionObject(s.buildInfo()),
		id.Server_ServerStatus_BuildInfo_ProductURI:       s.cfg.ProductURI,
		id.Server_ServerStatus_BuildInfo_ManufacturerName: b.ManufacturerName,
		id.Server_ServerStatus_BuildInfo_ProductName:      b.ProductName,
		id.Server_ServerStatus_BuildInfo_SoftwareVersion:  b.SoftwareVersion,
		id.Server_ServerStatus_BuildInfo_BuildNumber:      b.BuildNumber,
		id.Server_ServerStatus_BuildInfo_BuildDate:        b.BuildDate,
		id.Server_ServerStatus_SecondsTillShutdown:        uint32(0),
		id.Server_ServerStatus_ShutdownReason:             &ua.LocalizedText{},
	}
	if err := s.setAll(static); err != nil {
		panic("opcua: ServerStatus values must make Variants: " + err.Error())
	}
	s.nodes.currentTime.SetGetter(func() *ua.DataValue { return timeValue(s.clock.Now()) })
	s.nodes.serverStatus.SetGetter(func() *ua.DataValue {
		now := s.clock.Now()
		return &ua.DataValue{
			EncodingMask:    ua.DataValueValue | ua.DataValueSourceTimestamp | ua.DataValueServerTimestamp,
			Value:           ua.MustVariant(ua.NewExtensionObject(s.serverStatus(now))),
			SourceTimestamp: now,
			ServerTimestamp: now,
		}
	})
	s.publishStatus(s.clock.Now())
}

func timeValue(now time.Time) *ua.DataValue {
	return &ua.DataValue{
		EncodingMask:    ua.DataValueValue | ua.DataValueSourceTimestamp | ua.DataValueServerTimestamp,
		Value:           ua.MustVariant(now),
		SourceTimestamp: now,
		ServerTimestamp: now,
	}
}

// publishStatus stores CurrentTime and ServerStatus as of now, notifying
// their subscribers.
func (s *Server) publishStatus(now time.Time) {
	s.nodes.currentTime.SetDataValue(timeValue(now))
	st := timeValue(now)
	st.Value = ua.MustVariant(ua.NewExtensionObject(s.serverStatus(now)))
	s.nodes.serverStatus.SetDataValue(st)
}

func (s *Server) serverStatus(now time.Time) *ua.ServerStatusDataType {
	s.mu.Lock()
	start, state := s.start, s.state
	s.mu.Unlock()
	return &ua.ServerStatusDataType{
		StartTime:      start,
		CurrentTime:    now,
		State:          state,
		BuildInfo:      s.buildInfo(),
		ShutdownReason: &ua.LocalizedText{},
	}
}

func (s *Server) buildInfo() *ua.BuildInfo {
	b := s.cfg.BuildInfo
	return &ua.BuildInfo{
		ProductURI:       s.cfg.ProductURI,
		ManufacturerName: b.ManufacturerName,
		ProductName:      b.ProductName,
		SoftwareVersion:  b.SoftwareVersion,
		BuildNumber:      b.BuildNumber,
		BuildDate:        b.BuildDate,
	}
}

// capabilities are the Server.ServerCapabilities values: the limits the
// service layer and the subscription engine enforce (Config.Subscriptions
// holds the engine's resolved options).
func (s *Server) capabilities() map[uint32]any {
	c := s.cfg
	caps := map[uint32]any{
		id.Server_ServerCapabilities_ServerProfileArray:                                       []string{},
		id.Server_ServerCapabilities_LocaleIDArray:                                            []string{"en"},
		id.Server_ServerCapabilities_MaxBrowseContinuationPoints:                              uint16(c.MaxContinuationPoints),
		id.Server_ServerCapabilities_MaxQueryContinuationPoints:                               uint16(0),
		id.Server_ServerCapabilities_MaxHistoryContinuationPoints:                             uint16(c.MaxHistoryContinuationPoints),
		id.Server_ServerCapabilities_MaxArrayLength:                                           uint32(ua.MaxVariantArrayLength),
		id.Server_ServerCapabilities_MaxStringLength:                                          uint32(0),
		id.Server_ServerCapabilities_MaxByteStringLength:                                      uint32(0),
		id.Server_ServerCapabilities_MaxSessions:                                              uint32(c.MaxSessions),
		id.Server_ServerCapabilities_MaxSubscriptions:                                         uint32(c.Subscriptions.MaxSubscriptions),
		id.Server_ServerCapabilities_MaxSubscriptionsPerSession:                               uint32(c.Subscriptions.MaxSubscriptionsPerSession),
		id.Server_ServerCapabilities_MaxMonitoredItems:                                        uint32(c.Subscriptions.MaxMonitoredItems),
		id.Server_ServerCapabilities_MaxMonitoredItemsPerSubscription:                         uint32(c.Subscriptions.MaxMonitoredItemsPerSubscription),
		id.Server_ServerCapabilities_MinSupportedSampleRate:                                   float64(c.Subscriptions.MinSamplingInterval) / float64(time.Millisecond),
		id.Server_ServerCapabilities_MaxMonitoredItemsQueueSize:                               c.Subscriptions.MaxQueueSize,
		id.Server_ServerCapabilities_MaxSelectClauseParameters:                                uint32(subscription.MaxSelectClauses),
		id.Server_ServerCapabilities_MaxWhereClauseParameters:                                 uint32(subscription.MaxWhereOperands),
		id.Server_ServerCapabilities_OperationLimits_MaxMonitoredItemsPerCall:                 uint32(c.MaxMonitoredItemsPerCall),
		id.Server_ServerCapabilities_OperationLimits_MaxNodesPerRead:                          uint32(c.MaxNodesPerRead),
		id.Server_ServerCapabilities_OperationLimits_MaxNodesPerWrite:                         uint32(c.MaxNodesPerWrite),
		id.Server_ServerCapabilities_OperationLimits_MaxNodesPerBrowse:                        uint32(c.MaxNodesPerBrowse),
		id.Server_ServerCapabilities_OperationLimits_MaxNodesPerTranslateBrowsePathsToNodeIDs: uint32(c.MaxNodesPerTranslate),
		id.Server_ServerCapabilities_OperationLimits_MaxNodesPerRegisterNodes:                 uint32(c.MaxNodesPerRegister),
		id.Server_ServerCapabilities_OperationLimits_MaxNodesPerMethodCall:                    uint32(c.MaxNodesPerMethodCall),
		id.Server_ServerCapabilities_OperationLimits_MaxNodesPerHistoryReadEvents:             uint32(c.MaxNodesPerHistoryReadEvents),
		id.HistoryServerCapabilities_AccessHistoryEventsCapability:                            false,
		id.HistoryServerCapabilities_MaxReturnEventValues:                                     uint32(c.MaxHistoryEventsPerNode),
		id.Server_ServerCapabilities_OperationLimits_MaxNodesPerHistoryReadData:               uint32(c.MaxNodesPerHistoryReadData),
		id.HistoryServerCapabilities_AccessHistoryDataCapability:                              false,
		id.HistoryServerCapabilities_MaxReturnDataValues:                                      uint32(c.MaxHistoryValuesPerNode),
	}
	return caps
}

// setAll sets namespace 0 variables to Go values.
func (s *Server) setAll(values map[uint32]any) error {
	now := s.clock.Now()
	for n, v := range values {
		if err := s.space.SetValue(nsid(n), v, ua.StatusOK, now); err != nil {
			return fmt.Errorf("opcua: set i=%d: %w", n, err)
		}
	}
	return nil
}

// publishRedundantServers stores RedundantServerArray: this server with its
// ServiceLevel and state, then every peer with what SetPeerStatus last said
// of it (ServiceLevel 0 and state Unknown until then). mu must be held, or
// the server not yet shared.
func (s *Server) publishRedundantServers() {
	list := make([]*ua.ExtensionObject, 0, 1+len(s.cfg.PeerApplicationURIs))
	list = append(list, ua.NewExtensionObject(&ua.RedundantServerDataType{
		ServerID: s.cfg.ApplicationURI, ServiceLevel: s.level, ServerState: s.state,
	}))
	for _, uri := range s.cfg.PeerApplicationURIs {
		p, ok := s.peers[uri]
		if !ok {
			p = peerStatus{level: 0, state: ua.ServerStateUnknown}
		}
		list = append(list, ua.NewExtensionObject(&ua.RedundantServerDataType{
			ServerID: uri, ServiceLevel: p.level, ServerState: p.state,
		}))
	}
	if err := s.nodes.redundantServers.Set(list, ua.StatusOK, time.Time{}); err != nil {
		panic("opcua: ExtensionObjects must make a Variant: " + err.Error())
	}
}
