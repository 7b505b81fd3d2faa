/**/adlink.cb({
  "http_status": 200,
  "link": [
    {
      "title": "Apple iPhone 5 16GB weiß",
      "keywords": [
        "Apple",
        "iPhone 5"
      ],
      "ad": "https://r.example/v1/redirect?type=intext\u0026adId=EBAY.4.291181826279\u0026adType=product\u0026api_key=demo\u0026site_id=demo\u0026criterionId=Apple+iPhone+5",
      "display_type": [
        "link",
        "widget"
      ]
    }
  ]
});
