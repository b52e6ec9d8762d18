package engine_test

const determinismEnv = "STARPOD_DETERMINISM_CHILD"

func determinismChild() int { return 0 }
