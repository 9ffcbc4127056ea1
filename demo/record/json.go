package record

import (
	"encoding/json"
	"time"
)

// Recordings hold windows as whole microseconds under the names "window_us",
// "windows_us" and "static_us" (the dashboard reads them, and recordings
// written before the Go fields became time.Duration must still load): the
// methods below carry the time.Duration fields in that form. A field absent
// from the JSON keeps its value, as encoding/json does.

func micros(w time.Duration) int64 { return w.Microseconds() }

func fromMicros(us int64) time.Duration { return time.Duration(us) * time.Microsecond }

// MarshalJSON writes Window as "window_us".
func (n NodeSecond) MarshalJSON() ([]byte, error) {
	type plain NodeSecond
	return json.Marshal(struct {
		plain
		WindowUS int64 `json:"window_us"`
	}{plain(n), micros(n.Window)})
}

// UnmarshalJSON reads Window from "window_us".
func (n *NodeSecond) UnmarshalJSON(b []byte) error {
	type plain NodeSecond
	v := struct {
		*plain
		WindowUS int64 `json:"window_us"`
	}{plain: (*plain)(n), WindowUS: micros(n.Window)}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	n.Window = fromMicros(v.WindowUS)
	return nil
}

// MarshalJSON writes Window as "window_us".
func (s StaticResult) MarshalJSON() ([]byte, error) {
	type plain StaticResult
	return json.Marshal(struct {
		plain
		WindowUS int64 `json:"window_us"`
	}{plain(s), micros(s.Window)})
}

// UnmarshalJSON reads Window from "window_us".
func (s *StaticResult) UnmarshalJSON(b []byte) error {
	type plain StaticResult
	v := struct {
		*plain
		WindowUS int64 `json:"window_us"`
	}{plain: (*plain)(s), WindowUS: micros(s.Window)}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	s.Window = fromMicros(v.WindowUS)
	return nil
}

// MarshalJSON writes Windows as "windows_us" and StaticWindow as "static_us".
func (m Meta) MarshalJSON() ([]byte, error) {
	type plain Meta
	return json.Marshal(struct {
		plain
		WindowsUS []int64 `json:"windows_us"`
		StaticUS  int64   `json:"static_us"`
	}{plain(m), MicrosOf(m.Windows), micros(m.StaticWindow)})
}

// UnmarshalJSON reads Windows from "windows_us" and StaticWindow from "static_us".
func (m *Meta) UnmarshalJSON(b []byte) error {
	type plain Meta
	v := struct {
		*plain
		WindowsUS []int64 `json:"windows_us"`
		StaticUS  int64   `json:"static_us"`
	}{plain: (*plain)(m), StaticUS: micros(m.StaticWindow)}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	if v.WindowsUS != nil {
		m.Windows = make([]time.Duration, len(v.WindowsUS))
		for i, us := range v.WindowsUS {
			m.Windows[i] = fromMicros(us)
		}
	}
	m.StaticWindow = fromMicros(v.StaticUS)
	return nil
}

// MicrosOf returns windows in whole microseconds, the recordings' unit (nil
// for nil).
func MicrosOf(windows []time.Duration) []int64 {
	if windows == nil {
		return nil
	}
	out := make([]int64, len(windows))
	for i, w := range windows {
		out[i] = micros(w)
	}
	return out
}
