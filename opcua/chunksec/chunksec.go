// Package chunksec frames the crypto of OPC UA secure-channel chunks (Part 6
// §6.7.2): padding, signatures and encryption of an OpenSecureChannel chunk
// (asymmetric) or a MSG/CLO chunk (symmetric). The algorithms and key
// derivation are gopcua's uapolicy; this package only lays the bytes out,
// the same way for otopcua's server (opcua/uaserver) and its client
// (opcua/uaclient).
//
// Invariants: Seal and Unseal are inverses for one algorithm pair; Unseal
// never returns bytes whose signature it has not checked.
package chunksec

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/gopcua/opcua/uapolicy"
)

// SeqHeaderLen is the size of a sequence header.
const SeqHeaderLen = 8

// SymHeaderLen is the size of a MSG chunk's message header (12) and
// symmetric security header (4).
const SymHeaderLen = 12 + 4

// ErrChecksFailed: a chunk failed decryption, its signature or its
// padding. The error wrapping it says which.
var ErrChecksFailed = errors.New("chunk security checks failed")

// StripPadding removes the padding (PaddingSize, Padding bytes each equal
// to it, ExtraPaddingSize when extra) from the end of p.
func StripPadding(p []byte, extra bool) ([]byte, bool) {
	extraN := 0
	if extra {
		extraN = 1
	}
	if len(p) < 1+extraN {
		return nil, false
	}
	n := int(p[len(p)-1-extraN])
	if extra {
		n |= int(p[len(p)-1]) << 8
	}
	total := n + 1 + extraN
	if total > len(p) {
		return nil, false
	}
	low := byte(n)
	for _, x := range p[len(p)-total : len(p)-extraN] {
		if x != low {
			return nil, false
		}
	}
	return p[:len(p)-total], true
}

// Seal signs chunk (headers through body, hdrLen bytes of message and
// security header first) with alg and, when encrypt, pads and encrypts
// everything after the security header. It sets the MessageSize field and
// returns the chunk to send. extra says whether the padding has an
// ExtraPaddingSize byte (the encrypting key is longer than 2048 bits).
func Seal(chunk []byte, hdrLen int, alg *uapolicy.EncryptionAlgorithm, encrypt, extra bool) ([]byte, error) {
	sigLen := alg.SignatureLength()
	size := len(chunk) + sigLen
	if encrypt {
		pb := alg.PlaintextBlockSize()
		extraN := 0
		if extra {
			extraN = 1
		}
		pad := 0
		if r := (len(chunk) - hdrLen + 1 + extraN + sigLen) % pb; r != 0 {
			pad = pb - r
		}
		for range pad + 1 {
			chunk = append(chunk, byte(pad))
		}
		if extra {
			chunk = append(chunk, byte(pad>>8))
		}
		size = hdrLen + (len(chunk)-hdrLen+sigLen)/pb*alg.BlockSize()
	}
	binary.LittleEndian.PutUint32(chunk[4:], uint32(size))
	sig, err := alg.Signature(chunk)
	if err != nil {
		return nil, fmt.Errorf("sign: %w", err)
	}
	chunk = append(chunk, sig...)
	if !encrypt {
		return chunk, nil
	}
	c, err := alg.Encrypt(chunk[hdrLen:])
	if err != nil {
		return nil, fmt.Errorf("encrypt: %w", err)
	}
	return append(chunk[:hdrLen], c...), nil
}

// Unseal reverses Seal for a received chunk b: it decrypts what follows
// hdrLen bytes when decrypt (cipher blocks of blockSize), checks the
// signature of sigLen bytes and the padding, and returns the plaintext
// after the security header (sequence header and body). Every failure
// wraps ErrChecksFailed.
func Unseal(b []byte, hdrLen int, alg *uapolicy.EncryptionAlgorithm, decrypt bool, blockSize, sigLen int, extra bool) ([]byte, error) {
	msg := b
	if decrypt {
		c := b[hdrLen:]
		if len(c) == 0 || len(c)%blockSize != 0 {
			return nil, fmt.Errorf("%w: %d encrypted bytes: not whole blocks of %d", ErrChecksFailed, len(c), blockSize)
		}
		p, err := alg.Decrypt(c)
		if err != nil {
			return nil, fmt.Errorf("%w: decrypt: %v", ErrChecksFailed, err)
		}
		msg = append(append(make([]byte, 0, hdrLen+len(p)), b[:hdrLen]...), p...)
	}
	if len(msg) < hdrLen+SeqHeaderLen+sigLen {
		return nil, fmt.Errorf("%w: chunk too short for its signature", ErrChecksFailed)
	}
	signed, sig := msg[:len(msg)-sigLen], msg[len(msg)-sigLen:]
	if err := alg.VerifySignature(signed, sig); err != nil {
		return nil, fmt.Errorf("%w: signature: %v", ErrChecksFailed, err)
	}
	p := signed[hdrLen:]
	if decrypt {
		var ok bool
		if p, ok = StripPadding(p, extra); !ok || len(p) < SeqHeaderLen {
			return nil, fmt.Errorf("%w: bad padding", ErrChecksFailed)
		}
	}
	return p, nil
}

// SymMaxBody is the most body bytes one MSG chunk of bufSize bytes carries
// when secured with the symmetric algorithm a (Part 6 §6.7.2.5): signed
// only when !encrypt, a nil a for security None.
func SymMaxBody(a *uapolicy.EncryptionAlgorithm, encrypt bool, bufSize uint32) uint32 {
	const headers = SymHeaderLen + SeqHeaderLen
	switch {
	case a == nil:
		return bufSize - headers
	case !encrypt:
		return bufSize - headers - uint32(a.SignatureLength())
	}
	blocks := (int(bufSize) - SymHeaderLen) / a.BlockSize()
	return uint32(blocks*a.PlaintextBlockSize() - SeqHeaderLen - a.SignatureLength() - 1)
}

// SeqFollows reports whether sequence number next may follow prev on one
// channel (Part 6 §6.7.2.4): it is prev+1, or prev has passed
// MaxUint32-1024 and next has wrapped to below 1024.
func SeqFollows(prev, next uint32) bool {
	if prev < math.MaxUint32 && next == prev+1 {
		return true
	}
	return prev > math.MaxUint32-1024 && next < 1024
}
