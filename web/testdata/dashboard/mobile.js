// What a reader of the dashboard on a narrow screen gets: whether the page
// scrolls sideways, the smallest chart label's rendered height in CSS
// pixels, and the element that has the keyboard's focus.
(() => {
  const labels = [...document.querySelectorAll('#chart svg text')].map((t) => t.getBoundingClientRect().height);
  const f = document.activeElement;
  return {
    sideways: document.documentElement.scrollWidth > innerWidth,
    labels: labels.length,
    smallest: labels.length ? Math.min(...labels) : 0,
    focus: f ? (f.id || f.localName) + (f.closest('#dash') ? ' in dash' : '') : '',
  };
})()
