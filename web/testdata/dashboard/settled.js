// Resolves with the dashboard's state (body's data-state) once it is set
// and no longer "loading".
() => new Promise((resolve) => {
  const settled = () => {
    const s = document.body && document.body.dataset.state;
    if (s && s !== 'loading') {
      resolve(s);
      return true;
    }
    return false;
  };
  if (settled()) return;
  new MutationObserver((_, o) => {
    if (settled()) o.disconnect();
  }).observe(document.documentElement, { attributes: true, subtree: true, attributeFilter: ['data-state'] });
})
