/*
 * A shared library that exports no Tomii entry symbol (nothing at all), for tests/c_plugins.rs:
 * loading it as a scheduler or a kernel library must fail naming the missing symbol.
 */

typedef int tomii_test_no_entry;
