// Package deps pins the project's chosen dependencies in go.mod while the
// packages that use them are being written, so that parallel work never
// races on go.mod. Remove an import here once real code imports the module.
package deps

import (
	_ "github.com/asynkron/protoactor-go/actor"
	_ "github.com/asynkron/protoactor-go/remote"
	_ "github.com/cockroachdb/datadriven"
	_ "github.com/gopcua/opcua"
	_ "github.com/gopcua/opcua/server"
	_ "github.com/jonboulle/clockwork"
	_ "github.com/knadh/koanf/parsers/json"
	_ "github.com/knadh/koanf/providers/confmap"
	_ "github.com/knadh/koanf/providers/env/v2"
	_ "github.com/knadh/koanf/providers/file"
	_ "github.com/knadh/koanf/v2"
	_ "github.com/prometheus/client_golang/prometheus"
	_ "github.com/simonvetter/modbus"
	_ "github.com/spf13/cobra"
	_ "go.opentelemetry.io/otel"
	_ "go.opentelemetry.io/otel/exporters/prometheus"
	_ "go.opentelemetry.io/otel/sdk/metric"
	_ "go.uber.org/goleak"
	_ "pgregory.net/rapid"
)
