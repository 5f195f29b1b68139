// Sticky parts of a screen sit below the dashboard's own sticky bar, whose
// height depends on how its navigation wraps at the window's width.

/** The dashboard's sticky bar, as App renders it. */
const BAR = "header.top";

/**
 * A Svelte action for an element with position: sticky: it keeps the
 * element's top just below the bar, following the bar's height as the
 * window resizes.
 */
export function belowBar(node: HTMLElement): { destroy(): void } {
  const bar = document.querySelector<HTMLElement>(BAR);
  const place = () => {
    node.style.top = `${bar ? bar.offsetHeight : 0}px`;
  };
  place();
  if (!bar || typeof ResizeObserver === "undefined") return { destroy() {} };
  const watch = new ResizeObserver(place);
  watch.observe(bar);
  return { destroy: () => watch.disconnect() };
}
