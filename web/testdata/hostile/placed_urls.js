({
	hrefs: [...document.querySelectorAll("[data-adlink] a, a[data-adlink]")].map(a => a.getAttribute("href")),
	srcs: [...document.querySelectorAll("[data-adlink] img")].map(i => i.getAttribute("src")),
	asked: performance.getEntriesByType("resource").map(e => e.name).filter(u => u.includes("/v2/")),
})
