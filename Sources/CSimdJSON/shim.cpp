int hearth_csimdjson_placeholder(void) { return 0; }
