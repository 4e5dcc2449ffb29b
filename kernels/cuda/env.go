package cuda

import "os"

func getenvNVRTC() string { return os.Getenv(EnvNVRTC) }
