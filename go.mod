module github.com/otopcua/otopcua

go 1.26.8

require (
	github.com/gopcua/opcua v0.9.0
	github.com/jonboulle/clockwork v0.5.0
)

require github.com/stretchr/testify v1.12.1 // indirect
