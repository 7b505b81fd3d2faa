(shift, deployed) => {
	window.clockShift = shift;
	window.deployed = deployed;
	return adlink.search("iphone 15").then(r => ({links: r.link.length, instances, compiles}));
}
