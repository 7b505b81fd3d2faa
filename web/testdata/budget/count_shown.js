// Called with q, an ad's id and n: searches q in the page n times and
// resolves with how many answers showed the ad.
async (q, adId, n) => {
  let shown = 0;
  for (let i = 0; i < n; i++) {
    const body = await adlink.search(q, { loc: 'de', lang: 'de' });
    if (body.link.some((l) => new URL(l.ad).searchParams.get('adId') === adId)) shown++;
  }
  return shown;
}
