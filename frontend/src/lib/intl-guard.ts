// A safety net for third-party code that calls Intl with the page's locale.
//
// Under LANG=C, WebKitGTK reports navigator.language as "c" and its Intl
// constructors throw "RangeError: invalid language tag". Our own code never
// calls Intl (see format.ts), but uPlot builds an
// `Intl.NumberFormat(navigator.language)` and an `Intl.DateTimeFormat()` when
// its module loads, so importing it would take the whole chart code down.
// guardIntl() wraps the two constructors: a call that throws is retried with
// "en-US", and if that throws too a tiny hand-written formatter stands in.
// Calls that work are untouched.

const GUARDED = Symbol.for("freelane.intlGuarded");

type Ctor = new (locales?: string | string[], options?: object) => object;

function fallbackNumberFormat() {
  const format = (n: number | bigint) => String(n);
  return {
    format,
    formatToParts: (n: number | bigint) => [{ type: "literal", value: format(n) }],
    resolvedOptions: () => ({ locale: "en-US", numberingSystem: "latn" }),
  };
}

function fallbackDateTimeFormat() {
  const format = (d?: Date | number) => new Date(d ?? Date.now()).toISOString();
  return {
    format,
    formatToParts: (d?: Date | number) => [{ type: "literal", value: format(d) }],
    resolvedOptions: () => ({ locale: "en-US", calendar: "gregory", numberingSystem: "latn", timeZone: "UTC" }),
  };
}

function wrap(original: Ctor, fallback: () => object): Ctor {
  function Guarded(this: unknown, locales?: string | string[], options?: object) {
    try {
      return new original(locales, options);
    } catch {
      try {
        return new original("en-US", options);
      } catch {
        return fallback();
      }
    }
  }
  // Keep statics such as supportedLocalesOf and instanceof checks working.
  Object.setPrototypeOf(Guarded, original);
  Guarded.prototype = original.prototype;
  (Guarded as unknown as Record<symbol, boolean>)[GUARDED] = true;
  return Guarded as unknown as Ctor;
}

/** Installs the guard once; safe to call again. */
export function guardIntl(): void {
  if (typeof Intl === "undefined") return;
  const intl = Intl as unknown as Record<string, Ctor & Record<symbol, boolean>>;
  if (!intl.NumberFormat[GUARDED]) intl.NumberFormat = wrap(intl.NumberFormat, fallbackNumberFormat) as never;
  if (!intl.DateTimeFormat[GUARDED]) intl.DateTimeFormat = wrap(intl.DateTimeFormat, fallbackDateTimeFormat) as never;
}
