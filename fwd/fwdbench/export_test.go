package fwdbench

// ParseCPU exposes parseCPU to the tests.
var ParseCPU = parseCPU
