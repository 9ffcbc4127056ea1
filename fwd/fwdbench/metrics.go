package fwdbench

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// cpuMetric is the Prometheus process collector's CPU counter, which the
// daemon serves on its /metrics (adaptio forward --metrics-addr).
const cpuMetric = "process_cpu_seconds_total"

// MetricsCPU returns a probe for Options.ForwarderCPU that reads the
// daemon's CPU time from its Prometheus metrics at url
// (http://host:port/metrics). The counter moves in steps of the kernel's
// clock tick (10 ms on most systems), so a phase should last well over a
// second for a figure within a percent.
func MetricsCPU(url string) func() (time.Duration, error) {
	client := &http.Client{Timeout: 5 * time.Second}
	return func() (time.Duration, error) {
		resp, err := client.Get(url)
		if err != nil {
			return 0, fmt.Errorf("bench: forwarder metrics: %w", err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return 0, fmt.Errorf("bench: forwarder metrics %s: %s", url, resp.Status)
		}
		return parseCPU(io.LimitReader(resp.Body, 16<<20), url)
	}
}

// parseCPU finds cpuMetric in a Prometheus text exposition.
func parseCPU(r io.Reader, url string) (time.Duration, error) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), cpuMetric+" ")
		if !ok {
			continue
		}
		fields := strings.Fields(rest) // value, and a timestamp if any
		if len(fields) == 0 {
			break
		}
		v, err := strconv.ParseFloat(fields[0], 64)
		if err != nil || !(v >= 0) || v > float64(math.MaxInt64)/float64(time.Second) { // NaN fails v >= 0
			return 0, fmt.Errorf("bench: forwarder metrics %s: %s %q is not a CPU time", url, cpuMetric, fields[0])
		}
		return time.Duration(v * float64(time.Second)), nil
	}
	if err := sc.Err(); err != nil {
		return 0, fmt.Errorf("bench: forwarder metrics %s: %w", url, err)
	}
	return 0, fmt.Errorf("bench: forwarder metrics %s: no %s (is it adaptio forward's /metrics?)", url, cpuMetric)
}
