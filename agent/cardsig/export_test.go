package cardsig

import "github.com/gowebpki/jcs"

// JCS is the canonicalization Canonical ends with, for the RFC 8785 vectors.
func JCS(b []byte) ([]byte, error) { return jcs.Transform(b) }
