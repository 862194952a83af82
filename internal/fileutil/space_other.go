//go:build !linux && !darwin && !freebsd && !windows

package fileutil

func diskSpace(string) (Space, error) { return Space{}, ErrSpaceUnknown }
