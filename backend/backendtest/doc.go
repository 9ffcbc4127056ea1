// Package backendtest is the conformance suite every backend.Backend passes:
// round trips, concurrent writers, short reads at end of file, metadata
// operations and path confinement.
//
//	func TestConformance(t *testing.T) {
//		backendtest.Run(t, func(t *testing.T) backendtest.Harness {
//			return backendtest.Harness{Backend: newMyBackend(t)}
//		})
//	}
package backendtest
