package learn

import (
	"bytes"
	"fmt"
	"os"

	"github.com/adaptio/adaptio/detect"
)

// SaveFile writes m (detect.Model.Save) to path, created or truncated.
func SaveFile(m *detect.Model, path string) error {
	var buf bytes.Buffer
	if err := m.Save(&buf); err != nil {
		return err
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		return fmt.Errorf("detect: %w", err)
	}
	return nil
}

// LoadFile loads a model from a file written by SaveFile or
// detect.Model.Save (detect.Load's errors, prefixed with the path).
func LoadFile(path string) (*detect.Model, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("detect: %w", err)
	}
	defer fh.Close()
	m, err := detect.Load(fh)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return m, nil
}
