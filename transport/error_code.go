package transport

import (
	"reflect"
	"sync"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// responseErrorCode is the error code a request is counted under: the
// first non-zero ErrorCode of its answer, the top level's before its
// topics' and partitions', or 0 when every one is 0 (or there is no
// answer). The hot path's answers, Produce's and Fetch's, are read
// directly; every other is walked by its type's shape, learnt once.
func responseErrorCode(resp kmsg.Response) int16 {
	switch r := resp.(type) {
	case nil:
		return 0
	case *kmsg.ProduceResponse:
		for i := range r.Topics {
			for j := range r.Topics[i].Partitions {
				if code := r.Topics[i].Partitions[j].ErrorCode; code != 0 {
					return code
				}
			}
		}
		return 0
	case *kmsg.FetchResponse:
		if r.ErrorCode != 0 {
			return r.ErrorCode
		}
		for i := range r.Topics {
			for j := range r.Topics[i].Partitions {
				if code := r.Topics[i].Partitions[j].ErrorCode; code != 0 {
					return code
				}
			}
		}
		return 0
	}
	return walkedErrorCode(resp)
}

// walkedErrorCode is responseErrorCode by resp's shape alone.
func walkedErrorCode(resp kmsg.Response) int16 {
	v := reflect.ValueOf(resp)
	if v.Kind() != reflect.Pointer || v.IsNil() {
		return 0
	}
	return firstCode(v.Elem())
}

// codeShape is where a struct type keeps error codes: its own ErrorCode
// fields, then the fields (struct, pointer to struct, slice of struct)
// that may hold more.
type codeShape struct {
	codes  []int
	nested []int
}

var codeShapes sync.Map // reflect.Type -> *codeShape

func shapeOf(t reflect.Type) *codeShape {
	if s, ok := codeShapes.Load(t); ok {
		return s.(*codeShape)
	}
	s := &codeShape{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		switch {
		case f.Name == "ErrorCode" && f.Type.Kind() == reflect.Int16:
			s.codes = append(s.codes, i)
		case holdsStruct(f.Type):
			s.nested = append(s.nested, i)
		}
	}
	codeShapes.Store(t, s)
	return s
}

func holdsStruct(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Struct:
		return true
	case reflect.Pointer, reflect.Slice:
		return t.Elem().Kind() == reflect.Struct
	}
	return false
}

func firstCode(v reflect.Value) int16 {
	s := shapeOf(v.Type())
	for _, i := range s.codes {
		if code := int16(v.Field(i).Int()); code != 0 {
			return code
		}
	}
	for _, i := range s.nested {
		f := v.Field(i)
		switch f.Kind() {
		case reflect.Struct:
			if code := firstCode(f); code != 0 {
				return code
			}
		case reflect.Pointer:
			if !f.IsNil() {
				if code := firstCode(f.Elem()); code != 0 {
					return code
				}
			}
		case reflect.Slice:
			for j := 0; j < f.Len(); j++ {
				if code := firstCode(f.Index(j)); code != 0 {
					return code
				}
			}
		}
	}
	return 0
}
