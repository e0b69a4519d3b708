// Command-line flags of the benchmark scripts: `--name VALUE` pairs.

/** The value after `name` in argv, or `def` when the flag or its value is missing. */
export function flagValue(argv, name, def) {
  const i = argv.indexOf(name);
  return i >= 0 && argv[i + 1] !== undefined ? argv[i + 1] : def;
}
